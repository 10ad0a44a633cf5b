"""Search latency, warm and in-process: p50/p95 for one-line queries and ~4 KB tracebacks, and peak RSS.

    .venv/bin/python scripts/bench_search.py [--data-dir DIR] [--runs 200]

Defaults to the bundled corpus index (KB_DATA_DIR or .kb-data; run `make index` first).
Queries come from corpus/eval/queries.jsonl: `short_en` for one-liners, `traceback`
padded or cut to ~4 KB for pastes. Use scripts/gen_corpus.py for a 10k-article corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from pathlib import Path

from kb.config import Settings
from kb.service import KnowledgeBase

REPO = Path(__file__).resolve().parent.parent


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]


def queries(kind: str) -> list[str]:
    rows = [json.loads(line) for line in open(REPO / "corpus/eval/queries.jsonl", encoding="utf-8") if line.strip()]
    return [r["query"] for r in rows if r["kind"] == kind]


def to_4kb(text: str) -> str:
    while len(text.encode()) < 4096:
        text = text + "\n" + text
    return text.encode()[-4096:].decode("utf-8", "ignore")


def measure(kb: KnowledgeBase, qs: list[str], runs: int) -> tuple[float, float, float]:
    times = []
    for i in range(runs):
        q = qs[i % len(qs)]
        t = time.perf_counter()
        kb.search(q, top_k=5)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), percentile(times, 0.95), statistics.mean(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("KB_DATA_DIR", str(REPO / ".kb-data")))
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    kb = KnowledgeBase(Settings.from_env(data_dir=args.data_dir))
    t = time.perf_counter()
    kb.warm()
    print(f"index: {kb.stats()['articles']} articles, {kb.stats()['chunks']} chunks, model {kb.stats()['model_id']}")
    print(f"warm-up (load index + model): {time.perf_counter() - t:.2f} s")
    one_line = [q for q in queries("short_en") if "\n" not in q.strip()] or ["CUDA out of memory"]
    pastes = [to_4kb(q) for q in queries("traceback")] or [to_4kb("RuntimeError: CUDA error")]
    for name, qs in (("one-line", one_line), ("4KB traceback", pastes)):
        measure(kb, qs, min(20, args.runs))
        p50, p95, mean = measure(kb, qs, args.runs)
        print(f"{name:>14}: p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   mean {mean:6.1f} ms   ({args.runs} runs)")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
