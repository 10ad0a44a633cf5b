"""HTTP API throughput and latency: 16 concurrent clients against a real `kb serve` on loopback.

    .venv/bin/python scripts/bench_api.py [--data-dir DIR] [--clients 16] [--requests 1500]
    .venv/bin/python scripts/bench_api.py --url http://127.0.0.1:8000   # an already running server

Starts `kb serve` over the data dir (default: $KB_DATA_DIR, else .kb-data; build it with
`KB_DATA_DIR=/tmp/rel-bench .venv/bin/kb ingest corpus/`), warms it, then runs two phases
separately with N requests each, spread over the clients (threads, one keep-alive httpx
client each): one-line queries (`short_en` and `zh` from corpus/eval/queries.jsonl) and
~4 KB traceback pastes (`traceback`, padded or cut to 4 KB). Prints req/s, p50/p99,
errors and the server's RSS after each phase. Target on 2 cores: one-liners >= 60 req/s,
p99 <= 250 ms, zero errors.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from kb_cli.main import default_workers

REPO = Path(__file__).resolve().parent.parent


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))] if values else float("nan")


def load_queries(kinds: tuple[str, ...]) -> list[str]:
    rows = [json.loads(line) for line in open(REPO / "corpus/eval/queries.jsonl", encoding="utf-8") if line.strip()]
    return [r["query"] for r in rows if r["kind"] in kinds]


def to_4kb(text: str) -> str:
    while len(text.encode()) < 4096:
        text = text + "\n" + text
    return text.encode()[-4096:].decode("utf-8", "ignore")


def rss_mb(pid: int) -> float:
    """RSS of the server process and its children (uvicorn workers), in MB."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
            for tid in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in open(f"/proc/{p}/task/{tid}/children").read().split()]
        except OSError:
            pass
    return total


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data_dir: str, port: int, workers: int, extra_env: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "KB_DATA_DIR": data_dir, "HF_HUB_OFFLINE": "1", **(extra_env or {})}
    env.pop("KB_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "kb_cli", "serve", "--port", str(port), "--workers", str(workers)],
                            cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"kb serve exited: {proc.stderr.read().decode(errors='replace')[-2000:]}")
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("kb serve did not become healthy in 180 s")


def run_phase(url: str, queries: list[str], clients: int, total: int, timeout: float) -> dict:
    """`total` requests over `clients` threads; returns req/s, latency percentiles (ms), errors."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    counter = iter(range(total))

    def client(n: int) -> None:
        with httpx.Client(base_url=url, timeout=timeout) as c:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                q = queries[(i * 7 + n) % len(queries)]
                started = time.perf_counter()
                try:
                    r = c.post("/v1/search", json={"query": q, "top_k": 5})
                    ok = r.status_code == 200 and "results" in r.json()
                    err = None if ok else f"HTTP {r.status_code}: {r.text[:120]}"
                except (httpx.HTTPError, ValueError) as exc:
                    err = repr(exc)[:160]
                took = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(took)
                    if err:
                        errors.append(err)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    return {
        "requests": len(latencies), "seconds": round(wall, 2), "req_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies), 1), "p99_ms": round(percentile(latencies, 0.99), 1),
        "max_ms": round(max(latencies), 1), "errors": len(errors), "error_samples": errors[:3],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("KB_DATA_DIR", str(REPO / ".kb-data")))
    ap.add_argument("--url", help="benchmark this running server instead of starting one (RSS is then not reported)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=1500, help="requests per phase")
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--workers", type=int, default=default_workers(),
                    help="`kb serve --workers` (default: as shipped, one per core, at most 4)")
    ap.add_argument("--torch-threads", type=int, help="set OMP_NUM_THREADS for the server (torch intra-op threads)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()

    proc = None
    url = args.url
    if not url:
        port = free_port()
        extra = {"OMP_NUM_THREADS": str(args.torch_threads)} if args.torch_threads else {}
        proc = start_server(args.data_dir, port, args.workers, extra)
        url = f"http://127.0.0.1:{port}"
    try:
        health = httpx.get(url + "/healthz", timeout=10).json()
        phases = {
            "one-line": load_queries(("short_en", "zh")),
            "traceback-4kb": [to_4kb(q) for q in load_queries(("traceback",))],
        }
        warm = run_phase(url, phases["one-line"], args.clients, 64, args.timeout)  # model, segmenter, caches
        results = {"server": {"articles": health["articles"], "chunks": health["chunks"], "model": health["model_id"],
                              "rss_mb_start": round(rss_mb(proc.pid), 1) if proc else None,
                              "warmup_errors": warm["errors"]},
                   "clients": args.clients, "cores": os.cpu_count(), "workers": args.workers,
                   "torch_threads": args.torch_threads}
        for name, qs in phases.items():
            res = run_phase(url, qs, args.clients, args.requests, args.timeout)
            res["rss_mb_after"] = round(rss_mb(proc.pid), 1) if proc else None
            results[name] = res
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)

    if args.json:
        print(json.dumps(results, indent=2))
        return
    s = results["server"]
    print(f"server: {s['articles']} articles, {s['chunks']} chunks, model {s['model']}, "
          f"RSS at start {s['rss_mb_start']} MB; {results['clients']} clients on {results['cores']} cores, "
          f"{results['workers']} worker(s), torch threads {results['torch_threads'] or 'default'}")
    for name in phases:
        r = results[name]
        print(f"{name:14s} {r['requests']:5d} req in {r['seconds']:6.1f}s  {r['req_per_s']:6.1f} req/s  "
              f"p50 {r['p50_ms']:6.1f} ms  p99 {r['p99_ms']:6.1f} ms  max {r['max_ms']:7.1f} ms  "
              f"errors {r['errors']}  server RSS after {r['rss_mb_after']} MB")
        for e in r["error_samples"]:
            print(f"   error: {e}")


if __name__ == "__main__":
    main()
