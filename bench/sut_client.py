"""Benchmark: SUT client throughput against the built-in agent, and the client's own overhead.

The agent runs in a separate process (uvicorn, one worker) so the two sides' CPU can be told
apart: the client's share is its process CPU time over the wall time of ``ask_all``; the
server's share is read from ``/proc/<pid>/stat`` over the same window. Every demo item, all
phrasings, one ask plus one probe each. Run::

    .venv/bin/python bench/sut_client.py [--cases cases/erp] [--concurrency 1,4,16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from t2s_pipeline.cases import load_cases
from t2s_pipeline.sut.client import Item, build_items
from t2s_pipeline.sut.http import HttpSettings, HttpSutClient

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Measure:
    """One timed ``ask_all`` over every item at one concurrency."""

    concurrency: int
    items: int
    errors: int
    wall_s: float
    client_cpu_s: float
    server_cpu_s: float | None
    p50_ms: float
    p95_ms: float

    @property
    def items_per_s(self) -> float:
        return self.items / self.wall_s


def _serve(cases: str, port: int) -> None:
    import uvicorn

    from t2s_pipeline.agent.app import build_app

    uvicorn.run(build_app(cases), host="127.0.0.1", port=port, log_level="warning")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/v1/health").status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"the agent at {url} did not come up within {timeout_s} s")


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process, from /proc (Linux); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(url: str, items: Sequence[Item], concurrency: int, pid: int) -> Measure:
    """Time one full pass over the items at the given concurrency."""
    with HttpSutClient(HttpSettings(url, concurrency=concurrency)) as client:
        server_before, cpu_before = _cpu_seconds(pid), time.process_time()
        start = time.perf_counter()
        outcomes = asyncio.run(client.ask_all(items, "bench"))
        wall = time.perf_counter() - start
        cpu, server_after = time.process_time() - cpu_before, _cpu_seconds(pid)
    latencies = sorted(o.latency_s * 1000 for o in outcomes)
    server = None
    if server_before is not None and server_after is not None:
        server = server_after - server_before
    return Measure(
        concurrency=concurrency,
        items=len(items),
        errors=sum(o.error_class is not None for o in outcomes),
        wall_s=wall,
        client_cpu_s=cpu,
        server_cpu_s=server,
        p50_ms=statistics.median(latencies),
        p95_ms=latencies[int(0.95 * (len(latencies) - 1))],
    )


def _print(rows: Sequence[Measure]) -> None:
    print(
        f"{'conc':>4} {'items':>5} {'err':>3} {'wall s':>7} {'items/s':>8} {'p50 ms':>7} "
        f"{'p95 ms':>7} {'client cpu s':>12} {'client share':>12} {'server share':>12}"
    )
    for m in rows:
        server = "n/a" if m.server_cpu_s is None else f"{m.server_cpu_s / m.wall_s:.0%}"
        print(
            f"{m.concurrency:>4} {m.items:>5} {m.errors:>3} {m.wall_s:>7.2f} "
            f"{m.items_per_s:>8.1f} {m.p50_ms:>7.1f} {m.p95_ms:>7.1f} {m.client_cpu_s:>12.2f} "
            f"{m.client_cpu_s / m.wall_s:>12.0%} {server:>12}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=str(ROOT / "cases" / "erp"))
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--rounds", type=int, default=3, help="best of N per concurrency")
    args = parser.parse_args(argv)
    case_set = load_cases(args.cases)
    if not case_set.cases:
        raise SystemExit(f"no cases under {args.cases}")
    # Twins change what is excluded, not the amount of work: each case excludes itself here.
    items = build_items(case_set, {}, phrasings="all")
    port = _free_port()
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(args.cases, port))
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url)
        measure(url, items[:20], 4, server.pid or 0)  # warm-up: imports, connections, caches
        rows = []
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            runs = [measure(url, items, concurrency, server.pid or 0) for _ in range(args.rounds)]
            rows.append(min(runs, key=lambda m: m.wall_s))
    finally:
        server.terminate()
        server.join(timeout=10)
    print(f"{len(items)} items ({len(case_set.cases)} cases, all phrasings), ask + probe each")
    _print(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
