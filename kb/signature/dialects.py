"""Tracebacks as other tools print them, rewritten the way Python prints them.

The extractor and `frame_calls` know Python's own traceback format. Two other printers are
common in pastes, and their frames would otherwise be read as noise:
- IPython (Jupyter, Colab): the exception type on the header line
  (`CastError          Traceback (most recent call last)`), frames without quotes
  (`File ~/lib/datasets/builder.py:1871, in ArrowBasedBuilder._prepare_split_single(self, …)`,
  or `/usr/lib/…/trainer.py in predict(self, …)` before IPython 8), numbered source lines
  around an arrow (`-> 1871     writer.write_table(table)`);
- rich (many training CLIs): the traceback in a box (`╭── Traceback (most recent call last) ──╮`,
  `│ /path/train.py:74 in <module> │`, `│ ❱ 74 │ trainer.fit() │`, `╰────╯`).
Rewritten, their frames name packages and calls like any other traceback's. A notebook paste cut
before its final line (people copy what fits on the screen) keeps the header's type as its last line.
"""

from __future__ import annotations

import builtins
import re

_TB = "Traceback (most recent call last)"
_IPY_HEADER = re.compile(r"^(?P<type>[A-Za-z_][\w.]{0,200}?)[ \t]{2,}Traceback \(most recent call last\)[ \t]*$", re.M)
_IPY_FRAME = re.compile(
    r"File (?P<path>[^\s\n][^\n]{0,1000}?):(?P<line>\d{1,9}), in (?P<func>[\w<>.]{1,200})(?:\(.*)?$"  # IPython 8
    r"|Cell In\[\d{1,6}\], line (?P<cell_line>\d{1,9})$"  # IPython 8, the notebook cell itself
    r"|(?P<old_path><ipython-input-[\w-]{1,100}>|[^\s\n][^\n]{0,1000}?\.py)"  # before IPython 8
    r" in (?P<old_func>[\w<>.]{1,200}|<cell line: \d+>)(?:\(.*)?$"
)
_IPY_ARROW = re.compile(r"-*> ?\d{1,9} (?P<code>.*)$")
_IPY_CONTEXT = re.compile(r"[ \t]+\d{1,9}(?: .*)?$")

_RICH_BORDER = re.compile(r"^[ \t]*[│|][ \t]?|[ \t]*[│|][ \t]*$")
_RICH_FRAME = re.compile(r"(?P<path>[^\s│|][^\n│|]{0,1000}?\.py):(?P<line>\d{1,9}) in (?P<func>[\w<>.]{1,200})$")
_RICH_ARROW = re.compile(r"❱ ?\d{1,9}[ \t]*(?P<code>.*)$")
_RICH_CONTEXT = re.compile(r"\d{1,9}(?:[ \t].*)?$")
_RICH_GUIDES = re.compile(r"^(?:[│|][ \t]*)+")
_MAX_LINES = 4000


_PS_NATIVE = re.compile(
    r"^(?P<lead>[ \t]*)[\w.\\:/-]{1,200} : (?P<first>[^\n]*)\n"  # `python : Traceback (most recent call last):`
    r"At [^\n]{0,1000}char:\d{1,9}[ \t]*\n"  # `At line:1 char:1`, `At C:\run.ps1:3 char:1`
    r"(?:\+[^\n]*\n){1,6}"  # the command and its `~~~~` underline
    r"(?:[ \t]+\+ [^\n]*\n){1,4}"  # `    + CategoryInfo …`, `    + FullyQualifiedErrorId : NativeCommandError`
    r"(?:[ \t]*\n)?", re.M)
"""Windows PowerShell's wrapper around the first line a program wrote to stderr (ISE, or `2>&1`): the line behind
`python : `, then where the command was and an ErrorRecord. What follows is the program's own output."""


_EG_HEADER = "Exception Group Traceback (most recent call last)"
_EG_SEPARATOR = re.compile(r"[ \t]*\+-[-+]*(?: (?:\d{1,6}|\.\.\.) -+)?[ \t]*$")
_EG_GUIDE = re.compile(r"[ \t]*(?:\+ (?=Exception Group Traceback)|\|(?: |$))")


def _from_exception_group(text: str) -> str:
    """Python 3.11's exception groups (anyio, starlette, asyncio.TaskGroup: an ASGI server's errors) draw each
    sub-exception's traceback behind `|` guides, between `+-+---- 1 ----` separators; without them each is a plain
    traceback, the group's own first and its sub-exceptions after it, so the last one read is the real error."""
    out = []
    for line in text.split("\n"):
        if _EG_SEPARATOR.match(line):
            continue
        m = _EG_GUIDE.match(line)
        if m:
            line = line[m.end():]
        out.append(_TB + ":" if line.strip().startswith(_EG_HEADER) else line)
    return "\n".join(out)


_PYTEST_MARKS = ("short test summary info", "= FAILURES =", "= ERRORS =")
_PYTEST_FRAME = re.compile(r"^(?P<path>[^\s:][^\n:]{0,1000}?\.py):(?P<line>\d{1,9}): in (?P<func>[\w<>.]{1,200})[ \t]*$", re.M)
_PYTEST_NOISE = re.compile(
    r"^(?:=+ [^\n]* =+|_+ [^\n]* _+|(?:_ ){5,}_?|[^\s:][^\n:]{0,1000}?\.py:\d{1,9}: ?(?:[\w.]{1,200})?)[ \t]*$", re.M)
_PYTEST_E = re.compile(r"^E {1,7}(?=\S)", re.M)


def _from_pytest(text: str) -> str:
    """A failed test as pytest reports it: frames as `path.py:456: in func`, the error behind `E   `, the test's
    name and the run's summary between rules of `=` and `_`. Rewritten as Python prints a traceback, its frames
    name their packages and the summary bars are no error lines."""
    text = _PYTEST_E.sub("", _PYTEST_NOISE.sub("", text))
    first = _PYTEST_FRAME.search(text)
    if first is None:
        return text
    body = _PYTEST_FRAME.sub(lambda m: f'  File "{m["path"]}", line {m["line"]}, in {m["func"]}', text[first.start():])
    return text[:first.start()] + _TB + ":\n" + body


_VSCODE = re.compile(r"^Exception has occurred: (?P<type>[A-Za-z_][\w.]{0,200})[ \t]*\n(?P<msg>[^\n\s][^\n]{0,2000})$", re.M)
"""VS Code's debugger: `Exception has occurred: ValueError`, the message on the next line, then the frames."""


def pythonize(text: str) -> str:
    """The paste with each IPython or rich traceback, each exception group, each failed pytest test and VS Code's
    `Exception has occurred:` in Python's format, and PowerShell's wrapper of a program's first error line taken off
    (anything else unchanged)."""
    if "NativeCommandError" in text:
        text = _PS_NATIVE.sub(r"\g<lead>\g<first>\n", text)
    if "Exception has occurred: " in text:
        text = _VSCODE.sub(r"\g<type>: \g<msg>", text)
    if _EG_HEADER in text:
        text = _from_exception_group(text)
    if any(mark in text for mark in _PYTEST_MARKS):
        text = _from_pytest(text)
    if _TB in text and _ipython_header(text):
        return _from_ipython(text)
    if "❱" in text or "╭─" in text:
        return _from_rich(text)
    return text


def lines_with(text: str, needle: str):
    """(start, needle's place, end) of each line of `text` that holds `needle`, found with `str.find`: a line regex
    is then tried on those few lines, not at every position of a 64 KB paste."""
    i = text.find(needle)
    while i >= 0:
        start = text.rfind("\n", 0, i) + 1
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        yield start, i, end
        i = text.find(needle, end)


def _ipython_header(text: str) -> bool:
    """Whether a line is IPython's header (`CastError          Traceback (most recent call last)`): only the
    lines with a header are read, a regex over a whole 64 KB log costs half a millisecond."""
    return any(_IPY_HEADER.match(text, start, end) for start, _, end in lines_with(text, _TB))


def _from_ipython(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    etype: str | None = None  # the type of the notebook traceback being read
    for i, line in enumerate(lines):
        if i > _MAX_LINES:
            out.extend(lines[i:])
            break
        m = _IPY_HEADER.match(line)
        if m:
            _close(out, etype, text)
            etype = m.group("type")
            out.append(_TB + ":")
            continue
        if etype is None:
            out.append(line)
            continue
        stripped = line.strip()
        f = _IPY_FRAME.match(stripped)
        if f:
            func = f.group("func") or f.group("old_func") or "<module>"
            path = f.group("path") or f.group("old_path") or "<cell>"
            out.append(_frame(path, f.group("line") or f.group("cell_line"),
                              "<module>" if func.startswith("<cell line") else func))
            continue
        a = _IPY_ARROW.match(stripped)
        if a:
            out.append("    " + a.group("code").strip())
            continue
        if _IPY_CONTEXT.match(line) or not stripped or stripped.startswith(("...", "---")):
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


def _from_rich(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    in_box = False  # after a top border: a `|` at a line's start is the box's (a copy may turn `│` into it)
    for i, line in enumerate(lines):
        if i > _MAX_LINES:
            out.extend(lines[i:])
            break
        stripped = line.strip()
        if stripped.startswith("╭") and _TB in stripped:
            out.append(_TB + ":")
            in_box = True
            continue
        if stripped.startswith("╰"):
            in_box = False
            continue
        if not (stripped.startswith("│") or in_box and stripped.startswith("|") or "❱" in line):
            # Not a line of the box; but a frame whose border was lost in the copy still reads as one.
            f = _RICH_FRAME.match(_RICH_BORDER.sub("", stripped))
            out.extend(_first_frame(out) + [_frame(f.group("path"), f.group("line"), f.group("func"))] if f else [line])
            continue
        inner = _RICH_BORDER.sub("", line).strip()
        f = _RICH_FRAME.match(inner)
        if f:
            out.extend(_first_frame(out) + [_frame(f.group("path"), f.group("line"), f.group("func"))])
            continue
        a = _RICH_ARROW.match(inner)
        if a:
            out.append("    " + _RICH_GUIDES.sub("", a.group("code")).strip())
            continue
        if not inner or _RICH_CONTEXT.match(inner):
            continue  # numbered lines around the arrow, blank lines inside the box
        out.append(inner)  # locals, or a box that was not a traceback after all
    return "\n".join(out)


def _first_frame(out: list[str]) -> list[str]:
    """The header a frame needs when the paste starts inside the box (its top border cut off)."""
    return [] if any(line.startswith(_TB) for line in out[-400:]) else [_TB + ":"]


def _frame(path: str, line: str | None, func: str) -> str:
    return f'  File "{path}", line {line or 0}, in {func}'


_TYPE = r"(?:[A-Za-z_]\w{0,100}\.){0,12}[A-Za-z_]\w{0,100}(?:Error|Exception|Warning)"
_LOOSE_COLON = re.compile(r"(?<=\w)(?P<end>Error|Exception|Warning)(?:[ \t]+:(?=[ \t])|[ \t]*\uff1a)[ \t]*")
"""`ValueError : msg` (a space before the colon) and `RuntimeError：msg` (a Chinese input method's
full-width colon): how people retype an error in a post."""
_WIDE_COLON = re.compile(r"(?<=[A-Za-z0-9_)\]])[ \t]*\uff1a[ \t]*(?=[\x21-\x7e])")
"""The same full-width colon between two English words (`CUDA error：out of memory`); after Chinese it stays."""
_LOWER_TYPE = re.compile(
    r"^(?P<lead>[ \t>*`-]*)(?P<module>(?:[a-z_][a-z0-9_]{0,40}\.){0,6})(?P<type>[a-z]{2,40}(?:error|exception)):(?=[ \t])")
"""`valueerror: bfloat16 is only supported …`, `torch.cuda.outofmemoryerror: cuda out of memory`: a paste lowercased
whole, by an editor or a forum. A module path is lowercase as Python prints it; only the class needs its case back."""
_LOWER_FRAME = re.compile(r'^(?P<lead>[ \t]*(?:\[rank\d{1,5}\]: ?)?[ \t]*)file "', re.M)
"""A traceback's frames in a paste lowercased whole (`  file "/app/train.py", line 12, in <module>`)."""
_KNOWN_TYPES = {n.lower(): n for n in (
    *(n for n, v in vars(builtins).items()
      if isinstance(v, type) and issubclass(v, BaseException) and n.endswith(("Error", "Exception"))),
    "OutOfMemoryError", "DistBackendError", "DistNetworkError", "DistStoreError", "ChildFailedError",
    "RendezvousConnectionError", "CalledProcessError", "HFValidationError", "GatedRepoError", "HTTPError",
    "SafetensorError", "DatasetGenerationError", "AsyncEngineDeadError", "EngineDeadError", "ZeRORuntimeException",
)}
"""Lowercased exception names that can be given back their case: Python's own and those the corpus's libraries
raise (torch, the hub, DeepSpeed, vLLM, safetensors, datasets). An unknown lowercase word stays as it is: better
no exception than a made-up one."""
_CALL_FORM = re.compile(
    rf"(?<![\w.])(?<!raise )(?P<type>{_TYPE})\((?:[rRfFbBuU]{{0,2}}(?P<q>['\"])(?P<quoted>[A-Za-z][^()\n]{{0,400}}?)(?P=q)"
    r"|(?P<bare>[A-Za-z][^()\n'\"]{0,400}?[^()\n\\'\"]))\)")
"""`I got a ValueError(Attempting to unscale FP16 gradients).`, `ValueError(f"unknown zero stage {zero_stage}")`:
an exception as its repr, or as the call that raised it, in a sentence. Not `raise ValueError(...)` (source
code) and not `RayTaskError(ValueError)` (no message: one word)."""


_DOUBLED_HINT = re.compile(r"(?:Error|Exception)[\w.]{0,200}(?:Error|Exception)[ \t]*:")
"""Cheap test for `_DOUBLED_TYPE` over the whole paste (its backreference is slow on 64 KB)."""
_DOUBLED_TYPE = re.compile(
    r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w{0,100}\.){0,12}[A-Za-z_]\w{0,100}(?:Error|Exception))(?P=type)"
    r"(?:[ \t]*:)+[ \t]*")
"""`KeyErrorKeyError: : 'input_ids_j'`: two ranks printed the same exception into one terminal at once, their
characters interleaved. One copy is what either would have printed alone."""


def typed(text: str) -> str:
    """The paste with exception types written the way Python prints them: `Type: message`. Line by line, and
    only the lines that could need it: a regex run over a whole 64 KB paste costs a millisecond or more."""
    if _DOUBLED_HINT.search(text):
        text = _DOUBLED_TYPE.sub(r"\g<type>: ", text)
    if " :" in text or "\uff1a" in text or "error:" in text or "exception:" in text:
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if " :" in line or "\uff1a" in line:
                line = _LOOSE_COLON.sub(r"\g<end>: ", line)
                if "\uff1a" in line:
                    line = _WIDE_COLON.sub(": ", line)
            if "error:" in line or "exception:" in line:
                line = _LOWER_TYPE.sub(_restore_case, line)
            lines[i] = line
        text = "\n".join(lines)
    if "traceback (most recent call last)" in text or 'file "' in text:
        text = _LOWER_FRAME.sub(r'\g<lead>File "', text.replace("traceback (most recent call last)", _TB))
    return text


def _restore_case(m: re.Match[str]) -> str:
    known = _KNOWN_TYPES.get(m.group("type"))
    return m.group(0) if known is None else f"{m.group('lead')}{m.group('module')}{known}:"


def call_form(line: str) -> tuple[int, int, str, str] | None:
    """(start, end, type, message) of the first `Type(message)` in a line whose message reads as words (has a
    space), else None."""
    if "(" not in line:
        return None
    for m in _CALL_FORM.finditer(line):
        msg = m.group("quoted") or m.group("bare")
        if " " in msg:
            return m.start(), m.end(), m.group("type"), msg
    return None
