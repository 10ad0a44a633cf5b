"""Fit the confidence model behind the verdict and write kb/data/confidence.json.

    .venv/bin/python scripts/fit_confidence.py [--queries corpus/eval/queries.jsonl] [--data-dir DIR] [--ablation]

Rows: every eval query's top result, and every covered query searched again with its
article left out (kb/calibrate.py). Prints the out-of-fold figures (5 folds grouped by
article, thresholds chosen inside each training fold on its own out-of-fold probabilities; the
mean over calibrate.DEALS deals of articles into folds), then fits on all rows and writes the
coefficients, thresholds and those figures. `--ablation`: the same figures with each feature switched off in turn.
"""

from __future__ import annotations

import json
import sys

from kb import calibrate
from kb.evaluate import run
from kb.verdict import CONFIDENCE_FILE, MODEL_FEATURES, ConfidenceModel
from _eval_args import open_eval


def main() -> None:
    ablation = "--ablation" in sys.argv
    if ablation:
        sys.argv.remove("--ablation")
    kb, queries = open_eval(__doc__, confidence=ConfidenceModel.undecided())  # the evidence does not depend on it
    searcher = kb.searcher()
    report = run(queries, lambda q, k, exclude=frozenset(): searcher.search(q, top_k=k, exclude=exclude), k=1)
    rows, oof = report.rows, report.confidence
    print("out of fold (grouped by article):")
    print(json.dumps(oof, indent=1))
    if ablation:
        print(f"\n{'without':<18} {'none':>6} {'lao':>6} {'right':>6} {'prec':>6} {'acc':>6}")
        for name in ("(nothing)", *MODEL_FEATURES):
            f = calibrate.measure(rows, frozenset({name}))[1]
            print(f"{name:<18} {f['none_not_confident']:>6.3f} {f['lao_not_confident']:>6.3f} "
                  f"{f['right_top1_confident']:>6.3f} {f['precision_confident']:>6.3f} {f['confident_accuracy']:>6.3f}")
    fitted = calibrate.fit(rows)
    CONFIDENCE_FILE.write_text(json.dumps({
        "features": list(MODEL_FEATURES),
        "bias": round(float(fitted.coef[0]), 4),
        "coef": [round(float(c), 4) for c in fitted.coef[1:]],
        "answer_at": fitted.answer_at,
        "maybe_at": fitted.maybe_at,
        "reference": [round(float(r), 4) for r in fitted.reference],
        "out_of_fold": oof,
    }, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {CONFIDENCE_FILE}: answer at p >= {fitted.answer_at}, maybe at p >= {fitted.maybe_at}")


if __name__ == "__main__":
    main()
