"""A copy of a corpus without the summary sections, to measure the glossary bridge alone.

    .venv/bin/python scripts/without_summaries.py corpus/ /tmp/corpus-bridge
    KB_DATA_DIR=/tmp/kb-bridge .venv/bin/kb ingest /tmp/corpus-bridge
    KB_DATA_DIR=/tmp/kb-bridge .venv/bin/kb eval corpus/eval/queries.jsonl

Every bundled article ends with its story told in the other language (`## In English` /
`## 中文摘要`, corpus/AUTHORING.md); an article a user adds may not. On the copy, a question in
the other language reaches an article only through the glossary, as it would then.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from kb.parse import SUMMARY, classify_heading

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


def strip_summary(markdown: str) -> str:
    """The article without its summary sections (each up to the next heading of the same or a higher level)."""
    out: list[str] = []
    skipping_level = 0
    fence = ""  # the open code fence's marker: only the same marker closes it
    for line in markdown.split("\n"):
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~") and (not fence or marker == fence):
            fence = "" if fence else marker
        m = None if fence else _HEADING.match(line)
        if m and skipping_level and len(m.group(1)) <= skipping_level:
            skipping_level = 0
        if m and classify_heading(m.group(2)) == SUMMARY:
            skipping_level = len(m.group(1))
        if not skipping_level:
            out.append(line)
    return "\n".join(out).rstrip("\n") + "\n"


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    if dst.exists():
        sys.exit(f"{dst} exists: give a new directory")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("eval"))
    changed = 0
    for path in dst.rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        stripped = strip_summary(text)
        if stripped != text:
            path.write_text(stripped, encoding="utf-8")
            changed += 1
    print(f"{dst}: {changed} articles without their summary")


if __name__ == "__main__":
    main()
