"""Ingest throughput and the pipeline's overhead over the raw model encode.

    .venv/bin/python scripts/bench_ingest.py [PATH ...]   (default: corpus/)

Ingests into a fresh temporary data dir with the default model (loaded first, so
model load time is not counted), then encodes the very same chunk texts with the
raw model and reports (ingest - encode) / encode.
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from kb.config import Settings
from kb.embed import load_encoder
from kb.service import KnowledgeBase
from kb.store import DataDir, SnapshotFiles

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", default=[str(REPO / "corpus")])
    ap.add_argument("--model", default=None, help="embedding model (default: the bundled one)")
    args = ap.parse_args()
    encoder = load_encoder(args.model)
    encoder.encode(["warm up"])
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase(Settings(data_dir=Path(tmp), embed_model=args.model))
        kb.tokenizer("预热 jieba")
        t = time.perf_counter()
        report = kb.ingest([Path(p) for p in args.paths])
        ingest_s = time.perf_counter() - t
        snap = DataDir(Path(tmp)).current()
        conn = sqlite3.connect(SnapshotFiles(snap).db)
        texts = [f"{title}\n{text}" for title, text in conn.execute(
            "SELECT a.title, c.text FROM chunks c JOIN articles a ON a.id = c.article_id ORDER BY c.id")]
        conn.close()
        t = time.perf_counter()
        for i in range(0, len(texts), 32):
            encoder.encode(texts[i : i + 32], batch_size=32)
        encode_s = time.perf_counter() - t
    n_articles = len(report.added)
    print(f"articles {n_articles}, chunks {len(texts)}, failed {len(report.failed)}")
    print(f"ingest: {ingest_s:.1f} s  -> {n_articles / ingest_s:.1f} articles/s, {len(texts) / ingest_s:.1f} chunks/s")
    print(f"raw encode of the same chunks: {encode_s:.1f} s ({len(texts) / encode_s:.1f} chunks/s)")
    print(f"pipeline overhead over raw encode: {100 * (ingest_s - encode_s) / encode_s:.1f} %")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    sys.exit(0)


if __name__ == "__main__":
    main()
