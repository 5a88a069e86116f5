"""A minimal text-to-SQL service for t2s_pipeline: standard library only, one file.

It answers every question about "orders" with a count and anything else with a refusal, and
reports what it offered: enough to see each part of the contract work. Run it, then evaluate:

    python docs/examples/keyword_sut.py 8765 &
    t2s run --config configs/my-service.yaml     # sut: {kind: http, url: http://127.0.0.1:8765}
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TABLES = [{"name": "sales.orders", "ddl": "CREATE TABLE sales.orders (order_id INT, ...)"}]


def answer(question: str) -> dict:
    if "order" not in question.lower():
        return {"sql": None, "refused": True, "message": "I only know about orders"}
    return {"sql": "SELECT count(*) FROM sales.orders", "retrieval": {"tables": TABLES}}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # /v1/health: who am I, and do I honour exclude_examples?
        self.reply({"status": "ok", "supports_exclusions": True, "version": "keyword-1"})

    def do_POST(self):  # /v1/ask and /v1/retrieve (this service retrieves no examples)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/v1/ask":
            self.reply(answer(body["question"]))
        else:
            self.reply({"tables": TABLES, "examples": []})

    def reply(self, data: dict) -> None:
        payload = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
