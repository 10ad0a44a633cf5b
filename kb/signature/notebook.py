"""Tracebacks as Jupyter and Colab print them, rewritten the way Python prints them.

IPython shows a traceback with the exception type on its header line
(`CastError                  Traceback (most recent call last)`), frames without quotes
(`File ~/lib/datasets/builder.py:1871, in ArrowBasedBuilder._prepare_split_single(self, …)`,
or `/usr/lib/…/trainer.py in predict(self, …)` before IPython 8), and numbered source lines
around an arrow (`-> 1871     writer.write_table(table)`). The extractor and `frame_calls`
know Python's own format, so a notebook paste is rewritten into it first: its frames then name
their packages and calls like any other traceback's. A notebook paste cut before its final line
(people copy what fits on the screen) keeps the type from the header as a last line of its own.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^(?P<type>[A-Za-z_][\w.]{0,200}?)[ \t]{2,}Traceback \(most recent call last\)[ \t]*$", re.M)
_FRAME = re.compile(
    r"File (?P<path>[^\s\n][^\n]{0,1000}?):(?P<line>\d{1,9}), in (?P<func>[\w<>.]{1,200})(?:\(.*)?$"  # IPython 8
    r"|Cell In\[\d{1,6}\], line (?P<cell_line>\d{1,9})$"  # IPython 8, the notebook cell itself
    r"|(?P<old_path><ipython-input-[\w-]{1,100}>|[^\s\n][^\n]{0,1000}?\.py) in (?P<old_func>[\w<>.]{1,200}|<cell line: \d+>)(?:\(.*)?$"
)
_ARROW = re.compile(r"-*> ?\d{1,9} (?P<code>.*)$")
_CONTEXT = re.compile(r"[ \t]+\d{1,9}(?: .*)?$")
_MAX_LINES = 4000


def is_notebook(text: str) -> bool:
    return "Traceback (most recent call last)" in text and _HEADER.search(text) is not None


def pythonize(text: str) -> str:
    """The paste with each notebook traceback in Python's format (anything else unchanged)."""
    if not is_notebook(text):
        return text
    lines = text.split("\n")
    out: list[str] = []
    etype: str | None = None  # the type of the notebook traceback being read
    for i, line in enumerate(lines):
        if i > _MAX_LINES:
            out.extend(lines[i:])
            break
        m = _HEADER.match(line)
        if m:
            _close(out, etype, text)
            etype = m.group("type")
            out.append("Traceback (most recent call last):")
            continue
        if etype is None:
            out.append(line)
            continue
        stripped = line.strip()
        f = _FRAME.match(stripped)
        if f:
            path = f.group("path") or f.group("old_path") or "<cell>"
            func = f.group("func") or f.group("old_func") or "<module>"
            if func.startswith("<cell line"):
                func = "<module>"
            out.append(f'  File "{path}", line {f.group("line") or f.group("cell_line") or 0}, in {func}')
            continue
        a = _ARROW.match(stripped)
        if a:
            out.append("    " + a.group("code").strip())
            continue
        if _CONTEXT.match(line) or not stripped or stripped.startswith(("...", "---")):
            continue  # numbered lines around the arrow, and the blank lines between frames
        if line.startswith(etype) or line[:1].isalpha():
            etype = None  # the final exception line (or the paste moved on): the traceback is complete
        out.append(line)
    _close(out, etype, text)
    return "\n".join(out)


def _close(out: list[str], etype: str | None, text: str) -> None:
    """A notebook traceback cut before its final line: the header's type stands in for it, unless
    the user quoted the full error line elsewhere in the paste (above the stack trace, say)."""
    if etype is not None and f"{etype}: " not in text:
        out.append(etype)
