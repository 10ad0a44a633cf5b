"""Shared command-line set-up of the evaluation scripts (tune_ranking, ablation)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from kb.config import Settings
from kb.evaluate import EvalQuery, load_queries
from kb.service import KnowledgeBase

REPO = Path(__file__).resolve().parent.parent


def open_eval(doc: str, **kb_options) -> tuple[KnowledgeBase, list[EvalQuery]]:
    """Parse --queries/--data-dir, open the knowledge base and load the eval queries."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", default=str(REPO / "corpus/eval/queries.jsonl"))
    ap.add_argument("--data-dir", default=os.environ.get("KB_DATA_DIR", str(REPO / ".kb-data")))
    args = ap.parse_args()
    return KnowledgeBase(Settings.from_env(data_dir=args.data_dir), **kb_options), load_queries(Path(args.queries))
