"""Choose the ranking weights on the evaluation set, and say how well that choice generalises.

    .venv/bin/python scripts/tune_ranking.py [--queries corpus/eval/queries.jsonl] [--data-dir DIR] [--write]

Evidence is gathered once per query, dense similarity included; then a grid over the
fusion weights is scored by the mean over query kinds of MRR (so no kind is sacrificed
for another). The same choice is then made inside 5 folds grouped by article (kb/calibrate.py
folds) and scored on the held-out fold: the out-of-fold R@1 per kind is the honest figure.
Prints the table; `--write` puts the chosen weights and those figures into kb/data/ranking.json,
which the core loads. The confidence model is fitted separately, on the ranking this
chooses: scripts/fit_confidence.py (run it after a --write).
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from dataclasses import replace

import numpy as np

import sys

from kb.config import RANKING_FILE, RankingWeights
from kb.calibrate import FOLDS, article_groups, folds
from _eval_args import open_eval

GRID = {
    "lexical": [1.0],
    "dense": [0.2, 0.4, 0.7],
    "expansion": [0.0, 0.2, 0.4],
    "bridge": [0.0, 0.2, 0.4],
    "cross_boost": [1.0, 2.0, 4.0],
    "code_bilingual": [0.0, 0.25, 0.5],
    "template": [0.0, 0.3],
    "component": [0.0, 0.3],
    "calls": [0.0, 0.5],
    "facts": [0.0, 0.3],
}


def mrr_by_kind(searcher, gathered, weights: RankingWeights) -> dict[str, float]:
    """MRR@5 per query kind, straight from the feature matrices (fast enough for a grid)."""
    sums: dict[str, list[float]] = defaultdict(list)
    for q, c, relevant in gathered:
        if not q.relevant:
            continue
        rr = 0.0
        if relevant.any():
            scores = searcher.score_matrix(c.features, weights)
            best = scores[relevant].max()
            rank = int((scores > best).sum()) + 1
            rr = 1 / rank if rank <= 5 else 0.0
        sums[q.kind].append(rr)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def recall_at_1(searcher, gathered, weights: RankingWeights) -> dict[str, float]:
    hits: dict[str, list[float]] = defaultdict(list)
    for q, c, relevant in gathered:
        if q.relevant:
            scored = searcher.rank(c, weights)
            hits[q.kind].append(1.0 if scored and searcher.articles[scored[0][1]].id in q.relevant else 0.0)
    return {k: sum(v) / len(v) for k, v in hits.items()}


def choose(searcher, gathered):
    """The grid point with the best mean MRR over kinds that keeps every kind at or above the
    best system without the glossary (cross-lingual work must not cost any kind)."""
    results = []
    for values in itertools.product(*GRID.values()):
        w = replace(searcher.weights, **dict(zip(GRID, values)))
        per_kind = mrr_by_kind(searcher, gathered, w)
        results.append((sum(per_kind.values()) / len(per_kind), w, per_kind))
    no_glossary = [r for r in results if r[1].expansion == 0 and r[1].bridge == 0]
    floor = max(no_glossary, key=lambda r: r[0])[2]
    kept = [r for r in results if all(r[2][k] >= floor[k] - 1e-9 for k in floor)]
    return max(kept or results, key=lambda r: r[0]), floor


def main() -> None:
    write = "--write" in sys.argv
    if write:
        sys.argv.remove("--write")
    kb, queries = open_eval(__doc__)
    searcher = kb.searcher()
    gathered = []
    for q in queries:
        c = searcher.gather(q.query, always_dense=True)
        relevant = np.array([searcher.articles[ai].id in q.relevant for ai in c.pool], dtype=bool)
        gathered.append((q, c, relevant))
    print(f"{len(gathered)} queries gathered")

    (objective, weights, per_kind), floor = choose(searcher, gathered)
    print("best without the glossary (the floor no kind may fall below):", {k: round(v, 3) for k, v in floor.items()})
    current = mrr_by_kind(searcher, gathered, searcher.weights)
    print("MRR by kind   current -> tuned")
    for k in sorted(per_kind):
        print(f"  {k:<10} {current.get(k, 0):.3f} -> {per_kind[k]:.3f}")
    print("tuned weights:", {k: getattr(weights, k) for k in GRID})

    fold = folds(article_groups([tuple(q.relevant) for q, _, _ in gathered], [q.qid for q, _, _ in gathered]))
    oof: dict[str, list[float]] = defaultdict(list)
    for f in range(FOLDS):
        train = [g for g, k in zip(gathered, fold) if k != f]
        test = [g for g, k in zip(gathered, fold) if k == f]
        (_, chosen, _), _ = choose(searcher, train)
        for kind, r1 in recall_at_1(searcher, test, chosen).items():
            n = sum(1 for q, _, _ in test if q.relevant and q.kind == kind)
            oof[kind] += [r1] * n
    oof_r1 = {k: round(sum(v) / len(v), 3) for k, v in sorted(oof.items())}
    print("R@1 out of fold (weights chosen without the held-out articles):", oof_r1,
          "in-sample:", {k: round(v, 3) for k, v in sorted(recall_at_1(searcher, gathered, weights).items())})
    chosen = {k: getattr(weights, k) for k in RankingWeights.__dataclass_fields__}
    print(json.dumps(chosen, indent=2))
    if write:
        doc = json.loads(RANKING_FILE.read_text(encoding="utf-8"))
        doc.update(weights=chosen, out_of_fold_recall_at_1=oof_r1)
        RANKING_FILE.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RANKING_FILE}; now refit the confidence model: scripts/fit_confidence.py")

if __name__ == "__main__":
    main()
