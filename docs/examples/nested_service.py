"""A service built to its own contract, evaluated through the config's adapters (docs/sut.md).

Its routes are /status and /api/v2/generate (no retriever endpoint), it reads `prompt` and
answers `{"data": {"query": {"text": ...}}}`, and it wants an API key in `X-Api-Key`. It
knows the example questions of the `t2s init` project. Run it, then evaluate:

    SHOP_API_KEY=secret python nested_service.py 8766 build-1 &
    SHOP_API_KEY=secret t2s run --config configs/nested.yaml
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIGHTING = (
    "SELECT SUM(s.quantity) AS units FROM sales AS s "
    "JOIN products AS p ON p.id = s.product_id WHERE p.category = 'lighting'"
)


def answer(prompt: str) -> dict:
    sql = LIGHTING if "lighting" in prompt.lower() else None
    return {"data": {"query": {"text": sql}, "declined": sql is None}}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # the health document, in this service's words
        if self.authorised():
            self.reply(200, {"state": "up", "caps": {"exclusions": True}, "build": sys.argv[2]})

    def do_POST(self):
        if not self.authorised():
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.reply(200, answer(body["prompt"]))

    def authorised(self) -> bool:
        if self.headers.get("X-Api-Key") != os.environ["SHOP_API_KEY"]:
            self.reply(401, {"detail": "bad or missing API key"})
            return False
        return True

    def reply(self, status: int, data: dict) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
