"""The same real pastes, changed on their way to kb the way copies change them: does the answer hold?

    .venv/bin/python scripts/check_mangled.py [--queries corpus/eval/real_pastes.jsonl] [--data-dir DIR]

For each covered paste, its top result and verdict as pasted, then again after each change below.
A change kb undoes (line endings, HTML entities, zero-width characters, a viewer's line numbers)
should cost nothing; the others show how much a paste can lose before kb stops understanding it.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _eval_args import REPO, open_eval  # noqa: E402

def _stamped(q: str) -> list[str]:
    return [f"2026-11-27T05:{n // 60 % 60:02d}:{n % 60:02d}.000000000Z {line}" for n, line in enumerate(q.split("\n"))]


CHANGES = {
    "CRLF line endings": lambda q: q.replace("\n", "\r\n"),
    "HTML entities (a page's source, Slack)": html.escape,
    "zero-width spaces in words": lambda q: q.replace("Error", "Er\u200bror"),
    "a viewer's line numbers": lambda q: "\n".join(f"{n:>4}  {line}" for n, line in enumerate(q.split("\n"), 1)),
    "one JSON log field": lambda q: json.dumps({"level": "error", "msg": q}),
    "a timestamp on every line (docker -t)": lambda q: "\n".join(_stamped(q)),
    "timestamped, newest line first (Kibana)": lambda q: "\n".join(reversed(_stamped(q))),
    "full-width colons": lambda q: q.replace(": ", "\uff1a"),
    "lowercased whole": str.lower,
}


def main() -> None:
    if "--queries" not in sys.argv:
        sys.argv += ["--queries", str(REPO / "corpus/eval/real_pastes.jsonl")]
    kb, queries = open_eval(__doc__)
    covered = [q for q in queries if q.relevant]

    def score(change) -> tuple[int, int]:
        first = confident = 0
        for q in covered:
            resp = kb.search(change(q.query), top_k=5)
            right = bool(resp.results) and resp.results[0].article_id in q.relevant
            first += right
            confident += right and resp.confident
        return first, confident

    first, confident = score(lambda q: q)
    print(f"{len(covered)} covered pastes: as pasted, first {first}, confident right {confident}")
    for name, change in CHANGES.items():
        f, c = score(change)
        print(f"  {name:40s} first {f:4d} ({f - first:+d})   confident right {c:4d} ({c - confident:+d})")


if __name__ == "__main__":
    main()
