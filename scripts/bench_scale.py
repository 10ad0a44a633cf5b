"""How kb scales with the number of articles: ingest, index size, memory, search and write latency.

    .venv/bin/python scripts/bench_scale.py [--sizes 160,2000,10000] [--model hash] [--writes 5]

For each size, in a fresh process (so memory figures do not mix): generate that many
articles from the bundled ones (scripts/gen_corpus.py: same sections and error blocks, one
random "incident note" each), ingest them, then measure
- search p50/p95 over the dev set's one-liners (`short_en`) and over 4 KB tracebacks
  (`traceback` pastes cut or repeated to 4 KB), after a warm-up;
- write latency: adding one new article with `KnowledgeBase.add_article` plus the first
  search that sees it (what an admin's POST /v1/articles costs), median of --writes;
- peak RSS of the ingest (run as `kb ingest`, in its own process) and of the process that
  then opens the index, searches and writes (what a server holds), and the snapshot's size.
`--model hash` (the default here) leaves the embedding model out, so the figures are the
index's own; with the real model add its encode rate (scripts/bench_ingest.py) to ingest.
Prints one row per size and, at the end, the write-latency ratio of the largest size to the
smallest (the scale issue's bound is 1.5x from 160 to 2k articles).

Other backends come from the environment as in `kb serve`: e.g. KB_INDEX_BACKEND=qdrant
KB_QDRANT_PATH=/tmp/q (embedded Qdrant) and KB_METADATA_URL=postgresql://… (the database is
used as it is: give each run an empty one). "index MB" is then the data dir's copy only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

NEW_ARTICLE = """---
id: bench-write-{i}
title: "Bench write {i}: RuntimeError in custom op {i}"
lang: en
tags: [bench]
---
# Bench write {i}

## Error

```text
RuntimeError: custom_op_{i} failed: shape mismatch in bench kernel {i}
```

## Root cause

The bench kernel {i} was compiled for another shape.

## Fix

Rebuild the bench kernel {i}.
"""


def generate(out: Path, n: int, seed: int = 7) -> None:
    """`n` articles under `out` (the bundled corpus itself when n equals its size)."""
    subprocess.run([sys.executable, str(REPO / "scripts/gen_corpus.py"), str(out), "--n", str(n), "--seed", str(seed)],
                   check=True, capture_output=True)


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def one(n: int, model: str, writes: int) -> dict:
    from kb.config import Settings
    from kb.evaluate import load_queries
    from kb.service import KnowledgeBase

    queries = load_queries(REPO / "corpus/eval/queries.jsonl")
    short = [q.query for q in queries if q.kind == "short_en"]
    tracebacks = []
    for q in (q for q in queries if q.kind == "traceback"):
        text = q.query
        while len(text.encode()) < 4096:
            text = text + "\n" + q.query
        tracebacks.append(text.encode()[-4096:].decode("utf-8", "ignore"))

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        generate(corpus, n)
        # The ingest runs as `kb ingest` does, in a process of its own, so the two memory figures
        # are those of a batch job and of a server that opens the finished index.
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kb_cli", "ingest", "-q", str(corpus), "--data-dir", str(Path(tmp) / "data")],
                       check=True, env={**os.environ, "KB_EMBED_MODEL": model, "HF_HUB_OFFLINE": "1"}, cwd=REPO)
        ingest_s = time.perf_counter() - started
        ingest_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        kb = KnowledgeBase(Settings(data_dir=Path(tmp) / "data", embed_model=model))
        snapshot = kb.data.current()
        size_mb = sum(p.stat().st_size for p in snapshot.rglob("*") if p.is_file()) / 1e6

        for q in short[:5] + tracebacks[:5]:  # warm-up: segmenter, caches
            kb.search(q)
        timings = {}
        for name, batch in (("one-liner", short), ("4 KB traceback", tracebacks)):
            ms = []
            for q in batch:
                t = time.perf_counter()
                kb.search(q)
                ms.append((time.perf_counter() - t) * 1000)
            timings[name] = (statistics.median(ms), percentile(ms, 0.95))

        write_s = []
        for i in range(writes):
            t = time.perf_counter()
            kb.add_article(NEW_ARTICLE.format(i=i))
            kb.search(f"RuntimeError: custom_op_{i} failed: shape mismatch in bench kernel {i}")
            write_s.append(time.perf_counter() - t)

    return {
        "articles": n,
        "ingest_s": round(ingest_s, 1),
        "index_mb": round(size_mb, 1),
        "ingest_rss_mb": round(ingest_rss),
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "search_one_liner_ms": [round(v, 1) for v in timings["one-liner"]],
        "search_4kb_traceback_ms": [round(v, 1) for v in timings["4 KB traceback"]],
        "write_s": round(statistics.median(write_s), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="160,2000,10000", help="comma-separated article counts")
    ap.add_argument("--model", default="hash", help="embedding model (default: hash, the index's own cost)")
    ap.add_argument("--writes", type=int, default=5)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size in this process
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.model, args.writes)))
        return
    rows = []
    print(f"{'articles':>9} {'ingest s':>9} {'index MB':>9} {'ingest RSS':>10} {'serve RSS':>9} {'1-liner p50/p95 ms':>19} "
          f"{'4KB tb p50/p95 ms':>18} {'write s':>8}", flush=True)
    for n in (int(x) for x in args.sizes.split(",")):
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--model", args.model, "--writes", str(args.writes)],
                             capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        if out.returncode:
            sys.exit(f"size {n} failed:\n{out.stderr[-2000:]}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(f"{r['articles']:>9} {r['ingest_s']:>9} {r['index_mb']:>9} {r['ingest_rss_mb']:>10} {r['rss_mb']:>9} "
              f"{r['search_one_liner_ms'][0]:>9}/{r['search_one_liner_ms'][1]:<9} "
              f"{r['search_4kb_traceback_ms'][0]:>8}/{r['search_4kb_traceback_ms'][1]:<9} {r['write_s']:>8}", flush=True)
    if len(rows) > 1:
        print(f"write latency {rows[-1]['articles']} vs {rows[0]['articles']} articles: "
              f"{rows[-1]['write_s'] / rows[0]['write_s']:.1f}x")


if __name__ == "__main__":
    random.seed(0)
    main()
