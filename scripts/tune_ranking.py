"""Choose the ranking weights and fit the confidence model on the evaluation set.

    .venv/bin/python scripts/tune_ranking.py [--queries corpus/eval/queries.jsonl] [--data-dir DIR]

Evidence is gathered once per query, dense similarity included; then a grid over the
fusion weights is scored by the mean over query kinds of MRR (so no kind is sacrificed
for another). The logistic model for `confident` is fitted on the top result's evidence
as search really computes it with the tuned weights (the dense model consulted only when
it could change the top result; label: the top result is relevant). Prints the table
and the values to put in kb/config.py.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from dataclasses import replace

import numpy as np

from kb.config import RankingWeights
from kb.search import lead
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


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 0.01, steps: int = 50) -> np.ndarray:
    """L2-regularised logistic regression by Newton's method (a handful of features: converges exactly)."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    reg = l2 * np.eye(xb.shape[1])
    reg[0, 0] = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-xb @ w))
        grad = xb.T @ (p - y) / len(y) + reg @ w
        hess = (xb.T * (p * (1 - p))) @ xb / len(y) + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def main() -> None:
    kb, queries = open_eval(__doc__)
    searcher = kb.searcher()
    gathered = []
    for q in queries:
        c = searcher.gather(q.query, always_dense=True)
        relevant = np.array([searcher.articles[ai].id in q.relevant for ai in c.pool], dtype=bool)
        gathered.append((q, c, relevant))
    print(f"{len(gathered)} queries gathered")

    # The floor: the best system without the glossary (cross-lingual work must not cost any kind).
    results = []
    for values in itertools.product(*GRID.values()):
        w = replace(searcher.weights, **dict(zip(GRID, values)))
        per_kind = mrr_by_kind(searcher, gathered, w)
        results.append((sum(per_kind.values()) / len(per_kind), w, per_kind))
    no_glossary = [r for r in results if r[1].expansion == 0 and r[1].bridge == 0]
    floor = max(no_glossary, key=lambda r: r[0])[2]
    best = best_any = None
    for objective, w, per_kind in results:
        if best_any is None or objective > best_any[0] + 1e-9:
            best_any = (objective, w, per_kind)
        no_kind_drops = all(per_kind[k] >= floor[k] - 1e-9 for k in floor)
        if no_kind_drops and (best is None or objective > best[0] + 1e-9):
            best = (objective, w, per_kind)
    if best is None:
        print("no weights keep every kind at or above lexical search alone; taking the best mean")
        best = best_any
    objective, weights, per_kind = best
    print("best without the glossary (the floor no kind may fall below):", {k: round(v, 3) for k, v in floor.items()})
    current = mrr_by_kind(searcher, gathered, searcher.weights)
    print("MRR by kind   current -> tuned")
    for k in sorted(per_kind):
        print(f"  {k:<10} {current.get(k, 0):.3f} -> {per_kind[k]:.3f}")
    print("tuned weights:", {k: getattr(weights, k) for k in GRID})

    feats, labels, evs = [], [], []
    searcher.weights = weights
    for q, _, _ in gathered:
        c = searcher.gather(q.query)
        scored = searcher.rank(c, weights)
        if not scored:
            continue
        score, ai = scored[0]
        margin = lead(scored)
        ev = searcher.evidence(c, ai)
        feats.append([ev.lexical, ev.template, ev.template_share, ev.coverage, ev.unknown, margin])
        evs.append(ev)
        labels.append(1.0 if searcher.articles[ai].id in q.relevant else 0.0)
    x, y = np.array(feats), np.array(labels)
    coef = fit_logistic(x, y)
    names = ["conf_bias", "conf_lexical", "conf_template", "conf_template_share", "conf_coverage", "conf_unknown", "conf_margin"]
    fitted = dict(zip(names, (round(float(v), 3) for v in coef)))
    probs = 1 / (1 + np.exp(-(np.hstack([np.ones((len(x), 1)), x]) @ coef)))
    best_gate, best_acc = {}, 0.0
    for max_unknown in (0.3, 0.35, 0.4, 0.45, 0.5, 0.6):
        for min_coverage in (0.05, 0.1, 0.15, 0.2):
            gated = replace(weights, max_unknown=max_unknown, min_coverage=min_coverage)
            searcher.weights = gated
            covered = np.array([searcher.covered(ev) for ev in evs])
            for t in np.arange(0.2, 0.81, 0.05):
                acc = float((((probs >= t) & covered) == (y == 1)).mean())
                if acc > best_acc + 1e-9:
                    best_gate = {"confident_threshold": round(float(t), 2), "max_unknown": max_unknown, "min_coverage": min_coverage}
                    best_acc = acc
    print("confidence model:", fitted, best_gate, f"-> confident-accuracy {best_acc:.3f}")
    print("\nPut into kb/config.py RankingWeights:")
    print(json.dumps({**{k: getattr(weights, k) for k in GRID}, **fitted, **best_gate}, indent=2))


if __name__ == "__main__":
    main()
