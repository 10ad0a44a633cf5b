"""A copy of a corpus without the summary sections, to measure the glossary bridge alone.

    .venv/bin/python scripts/without_summaries.py corpus/ /tmp/corpus-bridge
    KB_DATA_DIR=/tmp/kb-bridge .venv/bin/kb ingest /tmp/corpus-bridge
    KB_DATA_DIR=/tmp/kb-bridge .venv/bin/kb eval corpus/eval/queries.jsonl

Every bundled article ends with its story told in the other language (`## In English` /
`## 中文摘要`, corpus/AUTHORING.md); an article a user adds may not. On the copy, a question in
the other language reaches an article only through the glossary, as it would then.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from kb.ingest import find_article_files
from kb.parse import SUMMARY, classify_heading, headings, parse_sections
from kb.scraped import clean_scraped_page


def strip_summary(markdown: str) -> str:
    """The article without its summary sections (each up to the next heading of the same or a higher level),
    found by the parser that ingest uses, so a `#` line inside a code block is never taken for a heading."""
    lines = markdown.split("\n")
    marks = headings(markdown) + [(len(lines), 0, "")]
    drop: set[int] = set()
    for n, (line, level, text) in enumerate(marks[:-1]):
        if classify_heading(text) == SUMMARY:
            end = next(at for at, lv, _ in marks[n + 1:] if lv <= level)
            drop.update(range(line, end))
    return "\n".join(l for k, l in enumerate(lines) if k not in drop).rstrip("\n") + "\n"


def strip_page_summary(text: str) -> str:
    """A scraped page (.txt) without its summary: the lines of the section the page's cleaner and the parser
    read as `summary` (its standalone `In English` / `中文摘要` line and the paragraphs under it), so what counts
    as the summary is what ingest reads as one."""
    page = clean_scraped_page(text)
    summary = {line.strip() for section in parse_sections(page.markdown, page.title) if section.kind == SUMMARY
               for line in (*section.heading_path[-1:], *section.text.split("\n")) if line.strip()}
    lines = text.split("\n")
    drop = [line.strip() in summary for line in lines]
    drop = [d or (not line.strip() and 0 < k < len(lines) - 1 and drop[k - 1] and drop[k + 1])  # the gap between them
            for k, (line, d) in enumerate(zip(lines, drop))]
    return "\n".join(line for line, d in zip(lines, drop) if not d)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    if dst.exists():
        sys.exit(f"{dst} exists: give a new directory")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("eval"))
    changed = 0
    for path in find_article_files([dst]):  # the files ingest would read
        text = path.read_text(encoding="utf-8")
        stripped = strip_page_summary(text) if path.suffix.lower() == ".txt" else strip_summary(text)
        if stripped != text:
            path.write_text(stripped, encoding="utf-8")
            changed += 1
    print(f"{dst}: {changed} articles without their summary")


if __name__ == "__main__":
    main()
