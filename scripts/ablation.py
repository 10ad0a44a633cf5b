"""What each part of the ranking buys: `kb eval` figures per kind with parts switched off.

    .venv/bin/python scripts/ablation.py [--queries corpus/eval/queries.jsonl] [--data-dir DIR]

Rows: the full system; without error-signature extraction (the raw paste is the query);
without the bilingual glossary (no query expansion, no bridge index); without the dense
model; lexical BM25 alone. Each variant is `Searcher.variant()` (other weights, or an
extractor that returns the paste unchanged) over the same loaded index.
"""

from __future__ import annotations

from dataclasses import replace

from kb.evaluate import run
from _eval_args import open_eval
from kb.signature import Signature, extract


def raw_paste(text: str) -> Signature:
    """The 'before' of error-signature extraction: no signal lines, no masking, no components."""
    return Signature(exception=None, message=None, lines=(), templates=(), components=(), prose=text[:4000])


def main() -> None:
    kb, queries = open_eval(__doc__)
    searcher = kb.searcher()
    full = searcher.weights
    variants = [
        ("full", full, extract),
        ("no signature", full, raw_paste),
        ("no glossary", replace(full, expansion=0.0, bridge=0.0), extract),
        ("no dense", replace(full, dense=0.0), extract),
        ("BM25 only", replace(full, expansion=0.0, bridge=0.0, dense=0.0, template=0.0, component=0.0), raw_paste),
    ]
    print(f"{'variant':<14} {'kind':<10} {'R@1':>6} {'R@5':>6} {'MRR':>6} {'conf-acc':>8} {'p50 ms':>7}")
    for name, weights, extractor in variants:
        variant = searcher.variant(weights=weights, extractor=extractor)
        report = run(queries, lambda q, k, exclude=frozenset(): variant.search(q, top_k=k, exclude=exclude))
        for k in [*report.per_kind, report.overall]:
            r1 = "  -  " if k.recall_at_1 is None else f"{k.recall_at_1:.3f}"
            r5 = "  -  " if k.recall_at_5 is None else f"{k.recall_at_5:.3f}"
            mrr = "  -  " if k.mrr is None else f"{k.mrr:.3f}"
            print(f"{name:<14} {k.kind:<10} {r1:>6} {r5:>6} {mrr:>6} {k.confident_accuracy:>8.3f} {k.p50_ms:>7.1f}")

if __name__ == "__main__":
    main()
