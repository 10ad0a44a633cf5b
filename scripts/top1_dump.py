"""Per-query top-1 and verdict on an eval file, as JSON lines: a refactor must not change one of them.

    .venv/bin/python scripts/top1_dump.py [--queries corpus/eval/queries.jsonl] [--data-dir DIR] > before.jsonl
    ... change the code ...
    .venv/bin/python scripts/top1_dump.py > after.jsonl && diff before.jsonl after.jsonl
"""

from __future__ import annotations

import json

from _eval_args import open_eval


def main() -> None:
    kb, queries = open_eval(__doc__)
    for q in queries:
        r = kb.search(q.query, top_k=5)
        print(json.dumps({"qid": q.qid, "top5": [x.article_id for x in r.results], "verdict": r.verdict,
                          "confidence": round(r.results[0].confidence, 6) if r.results else None}))


if __name__ == "__main__":
    main()
