"""Soak: `kb serve` under mixed searches and admin writes for a long run; watch errors, latency and RSS.

    .venv/bin/python scripts/soak.py                         # 10 min, real model, temp index of corpus/
    .venv/bin/python scripts/soak.py --model hash --seconds 60
    .venv/bin/python scripts/soak.py --data-dir /tmp/rel-bench  # a temp copy of this index

Starts `kb serve` (with KB_ADMIN_TOKEN) over a temp copy of the data dir you pass (default:
an index built from corpus/ into a temp dir with the default model, or `--model hash`).
This process then drives it on loopback with a bounded load: `--clients` search threads
(queries from corpus/eval/queries.jsonl, all kinds, one request in flight per thread) and
one writer that every `--write-interval` s adds, replaces or deletes one of a few `soak-*`
articles and checks the change is visible at once. Before the measured run, one pass
over every eval query and `--warmup` s of the mixed load warm the model, the segmenter, the
write path and the allocator, so "RSS at start" is the steady state and growth means a leak. Reports req/s, errors, p50/p99 per request
kind and server RSS at start and end (target: growth <= 10%), with RSS samples over time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench_api import rss_mb  # the server and its search processes

REPO = Path(__file__).resolve().parent.parent
TOKEN = "soak-admin-token"


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))] if values else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_index(data_dir: Path, model: str | None) -> None:
    env = {**os.environ, "KB_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    env.pop("KB_EMBED_MODEL", None)
    if model:
        env["KB_EMBED_MODEL"] = model
    print(f"building an index of corpus/ in {data_dir} (model {model or 'default'}) ...", flush=True)
    subprocess.run([sys.executable, "-m", "kb_cli", "ingest", "-q", str(REPO / "corpus")], env=env, cwd=REPO, check=True)


def start_server(data_dir: Path, port: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "KB_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "KB_ADMIN_TOKEN": TOKEN}
    for k in ("KB_URL", "KB_EMBED_MODEL"):
        env.pop(k, None)
    proc = subprocess.Popen([sys.executable, "-m", "kb_cli", "serve", "--port", str(port)], cwd=REPO, env=env,
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"kb serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("kb serve did not become healthy in 300 s")


def soak_article(n: int, version: int) -> str:
    return f"""---
id: soak-{n}
title: "Soak test article {n} (v{version})"
lang: en
tags: [soak]
---

## Error

```text
RuntimeError: soak failure {n} happened at version {version} in the soak harness
```

## Root cause

Soak article {n}, version {version}: written by scripts/soak.py to exercise the write path.

## Fix

Nothing to fix: delete soak-{n} (version {version}) when done.
"""


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {}
        self.errors: dict[str, list[str]] = {}

    def add(self, kind: str, ms: float, error: str | None) -> None:
        with self.lock:
            self.latencies.setdefault(kind, []).append(ms)
            if error:
                self.errors.setdefault(kind, []).append(error)


def search_loop(url: str, queries: list[str], offset: int, stop: threading.Event, stats: Stats, limit: list[int]) -> None:
    with httpx.Client(base_url=url, timeout=60) as c:
        i = offset
        while not stop.is_set():
            with stats.lock:
                if limit[0] <= 0:
                    return
                limit[0] -= 1
            q = queries[i % len(queries)]
            i += 7
            started = time.perf_counter()
            try:
                r = c.post("/v1/search", json={"query": q, "top_k": 5})
                err = None if r.status_code == 200 and "results" in r.json() else f"HTTP {r.status_code} {r.text[:120]}"
            except (httpx.HTTPError, ValueError) as exc:
                err = repr(exc)[:160]
            stats.add("search", (time.perf_counter() - started) * 1000, err)


def write_loop(url: str, interval: float, stop: threading.Event, stats: Stats) -> None:
    """add / replace / delete soak-0..2 in turn; after each 2xx, the change must be visible."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    alive: dict[int, int] = {}
    step = 0
    with httpx.Client(base_url=url, timeout=120, headers=auth) as c:
        while not stop.wait(interval):
            n = step % 3
            step += 1
            started = time.perf_counter()
            err = None
            try:
                if n in alive and alive[n] >= 2:
                    kind = "delete"
                    r = c.delete(f"/v1/articles/soak-{n}")
                    if r.status_code != 204:
                        err = f"DELETE -> {r.status_code} {r.text[:120]}"
                    elif c.get(f"/v1/articles/soak-{n}").status_code != 404:
                        err = "deleted article still visible"
                    else:
                        del alive[n]
                else:
                    kind = "replace" if n in alive else "add"
                    version = alive.get(n, 0) + 1
                    r = c.post("/v1/articles", content=soak_article(n, version), headers={"content-type": "text/markdown"})
                    if r.status_code not in (200, 201):
                        err = f"POST -> {r.status_code} {r.text[:120]}"
                    elif f"version {version}" not in c.get(f"/v1/articles/soak-{n}").json().get("root_cause", ""):
                        err = "written article not visible after its 2xx"
                    else:
                        alive[n] = version
            except (httpx.HTTPError, ValueError) as exc:
                kind, err = "write-error", repr(exc)[:160]
            stats.add(kind, (time.perf_counter() - started) * 1000, err)
        for n in list(alive):  # leave the data dir as found
            c.delete(f"/v1/articles/soak-{n}")


def run_load(url: str, queries: list[str], args, seconds: float, stats: Stats, sample=None) -> list:
    """The mixed load for `seconds`: search clients and one writer; returns (t, RSS) samples."""
    stop = threading.Event()
    limit = [args.max_requests]
    threads = [threading.Thread(target=search_loop, args=(url, queries, k * 13, stop, stats, limit))
               for k in range(args.clients)]
    threads.append(threading.Thread(target=write_loop, args=(url, args.write_interval, stop, stats)))
    started = time.monotonic()
    for t in threads:
        t.start()
    samples = [(0.0, sample())] if sample else []
    while time.monotonic() - started < seconds and any(t.is_alive() for t in threads[:-1]):
        time.sleep(min(args.sample_every, max(0.1, seconds - (time.monotonic() - started))))
        if sample:
            samples.append((round(time.monotonic() - started, 1), sample()))
    stop.set()
    for t in threads:
        t.join(timeout=300)
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", help="index to soak (a temp copy is used); default: build one from corpus/")
    ap.add_argument("--model", help="embedding model for the default index (e.g. hash); default: the bundled model")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--clients", type=int, default=4, help="search threads, one request in flight each")
    ap.add_argument("--write-interval", type=float, default=3.0, help="seconds between admin writes")
    ap.add_argument("--max-requests", type=int, default=1_000_000, help="stop the searches after this many")
    ap.add_argument("--warmup", type=float, default=60.0, help="seconds of mixed load before the measured run")
    ap.add_argument("--sample-every", type=float, default=30.0, help="RSS sample period (s)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kb-soak-"))
    data_dir = work / "data"
    proc = None
    try:
        if args.data_dir:
            shutil.copytree(args.data_dir, data_dir, ignore=shutil.ignore_patterns("ingest.lock"))
        else:
            build_index(data_dir, args.model)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        t0 = time.monotonic()
        proc = start_server(data_dir, port, work / "serve.log")
        boot_s = time.monotonic() - t0
        rss_boot = rss_mb(proc.pid)
        rows = [json.loads(line) for line in open(REPO / "corpus/eval/queries.jsonl", encoding="utf-8") if line.strip()]
        queries = [r["query"] for r in rows]

        # warm-up: every eval query once, then the mixed load for --warmup s, so the model, the
        # segmenter, the write path and the allocator reach steady state before "start"
        warm = Stats()
        per = [len(queries)]
        threads = [threading.Thread(target=search_loop, args=(url, queries, k, threading.Event(), warm, per))
                   for k in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        run_load(url, queries, args, args.warmup, warm)
        rss_start = rss_mb(proc.pid)

        stats = Stats()
        started = time.monotonic()
        samples = run_load(url, queries, args, args.seconds, stats, lambda: rss_mb(proc.pid))
        wall = time.monotonic() - started
        rss_end = rss_mb(proc.pid)
        health = httpx.get(url + "/healthz", timeout=30).json()
        server_alive = proc.poll() is None
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)

    total = sum(len(v) for v in stats.latencies.values())
    summary = {
        "seconds": round(wall, 1), "server_boot_s": round(boot_s, 1), "model": health["model_id"],
        "articles": health["articles"], "clients": args.clients, "write_interval_s": args.write_interval,
        "requests": total, "req_per_s": round(total / wall, 1),
        "errors": sum(len(v) for v in stats.errors.values()),
        "warmup_requests": sum(len(v) for v in warm.latencies.values()),
        "warmup_errors": sum(len(v) for v in warm.errors.values()),
        "kinds": {k: {"n": len(v), "p50_ms": round(statistics.median(v), 1), "p99_ms": round(percentile(v, 0.99), 1),
                      "errors": len(stats.errors.get(k, []))} for k, v in sorted(stats.latencies.items())},
        "error_samples": [e for v in stats.errors.values() for e in v][:5],
        "rss_mb": {"boot": round(rss_boot, 1), "start": round(rss_start, 1), "end": round(rss_end, 1),
                   "growth_pct": round((rss_end - rss_start) / rss_start * 100, 1)},
        "rss_samples": [(t, round(r, 1)) for t, r in samples],
        "server_alive": server_alive,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"soak: {summary['seconds']}s, model {summary['model']}, {summary['articles']} articles at the end, "
              f"{args.clients} search clients + 1 writer every {args.write_interval}s")
        print(f"requests {total} ({summary['req_per_s']} req/s), errors {summary['errors']} "
              f"(warm-up: {summary['warmup_requests']} requests, {summary['warmup_errors']} errors)")
        for k, v in summary["kinds"].items():
            print(f"  {k:8s} n={v['n']:6d}  p50 {v['p50_ms']:7.1f} ms  p99 {v['p99_ms']:7.1f} ms  errors {v['errors']}")
        r = summary["rss_mb"]
        print(f"server RSS: boot {r['boot']} MB, start (after warm-up) {r['start']} MB, end {r['end']} MB, "
              f"growth {r['growth_pct']}% (target <= 10%)")
        print("RSS samples (s, MB):", summary["rss_samples"])
        for e in summary["error_samples"]:
            print("  error:", e)
    if summary["errors"] or summary["warmup_errors"] or not server_alive:
        sys.exit(1)


if __name__ == "__main__":
    main()
