"""The shipped verdicts on real pastes, as a user gets them (no refit, unlike `kb eval`).

    .venv/bin/python scripts/check_pastes.py [--queries corpus/eval/real_pastes.jsonl] [--data-dir DIR]

For the covered pastes: how many have their article first and in the top 5, and how many
confident answers are right or wrong; for the uncovered ones (`relevant: []`): how many get
`none`, `maybe` or a confident answer. Used on corpus/eval/real_pastes.jsonl and on
corpus/eval/heldout_pastes.jsonl (measure on that one; never fix to it).
"""

from __future__ import annotations

from collections import Counter

from _eval_args import open_eval


def main() -> None:
    kb, queries = open_eval(__doc__)
    c: Counter = Counter()
    for q in queries:
        resp = kb.search(q.query, top_k=5)
        ids = [r.article_id for r in resp.results]
        if q.relevant:
            right = bool(ids) and ids[0] in q.relevant
            c["covered"] += 1
            c["first"] += right
            c["top5"] += any(i in q.relevant for i in ids)
            c["confident right" if right else "confident wrong"] += resp.confident
            c[f"first {resp.verdict}"] += right
        else:
            c["uncovered"] += 1
            c[f"uncovered {resp.verdict}"] += 1
    print(f"covered {c['covered']}: first {c['first']}, top 5 {c['top5']}, "
          f"confident right {c['confident right']}, confident wrong {c['confident wrong']}")
    print(f"  right first, verdict: answer {c['first answer']}, maybe {c['first maybe']}, none {c['first none']}")
    print(f"uncovered {c['uncovered']}: none {c['uncovered none']}, maybe {c['uncovered maybe']}, "
          f"answer {c['uncovered answer']}")


if __name__ == "__main__":
    main()
