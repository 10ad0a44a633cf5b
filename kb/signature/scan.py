"""`extract()`: the driver of one pass over a paste. Most lines of a long log are chatter,
decided once per line shape here; the rest go to the extractor's state machine."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from itertools import accumulate

from .model import MAX_LINE, MAX_TEXT, Signature
from .mask import _ANSI_ESC
from .prefixes import _ANSI_LOOSE, _strip_prefixes
from .classify import _CJK, _kw_hit, is_error_line
from .extractor import _Extractor
from .assemble import assemble
from .dialects import _TB, lines_with, pythonize, typed


def extract(text: str) -> Signature:
    """Pick the signal of a pasted error: exception, signal lines, templates, components, prose.

    Why: retrieval on a 200-line paste is dominated by noise (frames, progress
    bars, env dumps); the signature keeps what identifies the failure.
    Never raises; input beyond MAX_TEXT keeps its head and (more of) its tail,
    where the final exception lives.
    """
    try:
        return _extract(text)
    except Exception:  # pragma: no cover - last-resort guard, extraction is best effort
        return Signature(None, None, (), (), (), "")


# What a line outside any traceback, message or summary is (see _quiet_kind).
_PARSE, _PARSE_KW, _NOISE, _PROSE, _BLANK = range(5)
_DIGITS_TO_0 = bytes.maketrans(b"123456789", b"000000000")
_FORM_LINE = re.compile(r"[ \t]{0,3}(?:[-*] \[[ xX]\] |#{2,6} )")
"""An issue form's own lines (`### System Info`, `- [X] I have searched the existing issues`): the same on every
report filed through it, so its words say nothing about this one. A heading that names an error stays, and so does
a line under a single `# `: as often a comment in a pasted script (`# 出现 "ACSCtl: …" 表示 …`) as a heading."""


def _quiet_kind(raw: str) -> int:
    """Parse the line (keyword gate off/on), or drop it as noise, prose or blank.

    Why: most of a long paste is chatter (INFO lines, bars, metrics) and is
    rejected here with a few substring tests.  The answer never depends on
    which digits a line holds, so the caller decides each line shape once.
    """
    if ("INFO" in raw[:64] or "it/s]" in raw or "s/it]" in raw) and not (
        "rror" in raw or "ail" in raw or "Traceback" in raw
    ):
        kw = False  # INFO chatter and progress bars: the commonest noise, decided without the gate
    else:
        kw = _kw_hit(raw.lower())
    if not kw and _FORM_LINE.match(raw):
        return _BLANK
    if (
        kw
        or (raw[:1] in "WEF" and raw[1:5].isdigit())  # glog W/E/F lines carry their level only
        or "Traceback" in raw
        or "Root Cause" in raw
        or "Failures:" in raw
        or (not raw.isascii() and _CJK.search(raw))
    ):
        return _PARSE_KW if kw else _PARSE
    body = raw.strip()
    if _Extractor.prose_like(body) and not raw.startswith(("    ", "\t")):
        return _PROSE
    return _NOISE if body else _BLANK


_GLUED_TB = re.compile(
    r"^(?P<head>[^\n]{0,2000}?\S) ?(?P<tb>(?:\[(?:rank|default)\d{1,5}\]: ?)?Traceback \(most recent call last\))", re.M)


_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
_DROP_INVISIBLE = str.maketrans("", "", _INVISIBLE)
"""Zero-width characters that a web page or an editor leaves inside words (`Runtime\u200bError`)."""
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|quot|amp|lt|gt|apos|nbsp);")
"""HTML entities of a paste copied from a page's source or an escaped log (`No module named &#39;flash_attn&#39;`)."""
_ENTITY_STARTS = ("&#", "&quot;", "&amp;", "&lt;", "&gt;", "&apos;", "&nbsp;")  # found without a regex pass
_ESCAPED_TB = re.compile(r"\\n(?:[ \t]*File \\?[\"']|Traceback \(most recent call last\))|last\):\\n")
"""A traceback inside a JSON log field or a Python string (`{"msg": "Traceback (most recent call last):\\n  File
\\"/app/train.py\\", …`): its newlines and quotes are escapes, so it is one long line until they are undone.
A traceback's own marks say so, or a one-line paste with several: a Windows path holds `\\n` too
(`C:\\new\\train.py`), but seldom three times on one line."""
_LISTED_TB = re.compile(r"""\\n['"],\s*['"]""")
"""`traceback.format_exception()` printed as the list it returns: `['Traceback (most recent call last):\\n', '  File …`."""
_ESCAPED_STRING = re.compile(r"""(?P<q>["'])(?P<body>Traceback \(most recent call last\):\\n(?:[^\n\\]|\\.)*?)(?P=q)""")
"""The quoted string that holds an escaped traceback (`{"error": "Traceback …\\nValueError: …", "code": 500}`,
`exception='Traceback …'`): it ends at its closing quote, and what follows is the record's, not the message's."""
_ESCAPE = re.compile(r"\\(?:r\\n|[nt\"'\\]|u[0-9a-fA-F]{4})")
_UNESCAPED = {"\\r\\n": "\n", "\\n": "\n", "\\t": "\t", '\\"': '"', "\\'": "'", "\\\\": "\\"}


def _unescape(m: re.Match[str]) -> str:
    e = m.group(0)
    return chr(int(e[2:], 16)) if e[1] == "u" else _UNESCAPED[e]  # `\u4f60`: JSON's escape of a Chinese character


_GUTTER = re.compile(r"[ \t]*(\d{1,6})(?:(?P<bar>[ \t]*[|\u2502:-][ \t]?)|(?P<gap>[ \t]+)|(?P<glued>(?=[A-Za-z]))|$)")
_GUTTER_MIN_LINES = 3
_GUTTER_UNNUMBERED_TAIL = 2
"""Lines after the last numbered one that the gutter may leave unnumbered: a log page's closing annotation (GitHub
Actions' `Error: Process completed with exit code 1.`), a line the user typed under the copy."""


def _drop_gutter(text: str) -> str:
    """The paste without the line numbers of the editor, pastebin or viewer it was copied from (`1  Traceback …`,
    `2 |   File …`): a gutter numbers nearly every line, one up from the last. Log lines that open with a
    number (ranks, epoch timestamps) do not count up that way. A gutter of spaces is as wide as its narrowest
    gap: what is wider is the line's own indentation; a gutter glued to the text (`12Traceback …`, `13  File …`,
    copied from GitHub Actions' log page) has no gap of its own. `grep -n`'s `120-` (context) and `125:` (match)
    are gutters too."""
    lines = text.split("\n")
    first = [_GUTTER.match(line) for line in lines[:_GUTTER_MIN_LINES * 2] if line.strip()][:_GUTTER_MIN_LINES]
    if len(first) < _GUTTER_MIN_LINES or not all(first) or any(
            int(b.group(1)) != int(a.group(1)) + 1 for a, b in zip(first, first[1:])):
        return text  # a stamp or a count that does not go up by one from the first line: no gutter
    found = [(_GUTTER.match(line) if line.strip() else None) for line in lines]
    numbered = [int(m.group(1)) for m in found if m]
    last = max((i for i, m in enumerate(found) if m), default=-1)
    after = sum(1 for line in lines[last + 1:] if line.strip())  # GitHub Actions' closing `Error: …` has no number
    filled = sum(1 for line in lines[:last + 1] if line.strip() and line != "--")  # `--`: grep's group separator
    if len(numbered) < _GUTTER_MIN_LINES or len(numbered) < 0.9 * filled or after > _GUTTER_UNNUMBERED_TAIL:
        return text
    steps, previous, regrouped = 0, None, False
    for line, m in zip(lines, found):
        if line == "--":  # grep's group separator: the next group starts further down the file
            regrouped = True
        elif m:
            n = int(m.group(1))
            steps += previous is not None and (n == previous + 1 or regrouped and n > previous)
            previous, regrouped = n, False
    if steps < 0.9 * (len(numbered) - 1):
        return text
    glued = any(m and m.group("glued") is not None for m in found)  # GitHub Actions' viewer: `12Traceback …`
    gap = 0 if glued else min((len(m.group("gap")) for m in found if m and m.group("gap")), default=0)
    return "\n".join(line if m is None else line[m.end("bar"):] if m.group("bar") is not None else
                     line[m.end(1) + min(gap, len(m.group("gap") or "")):] for line, m in zip(lines, found))


_IMAGE = re.compile(r"!\[[^\]\n]{0,200}\]\([^()\s]{1,2000}(?:[ \t]+\"[^\"\n]{0,200}\")?\)|<img\s[^<>\n]{0,2000}?\bsrc=[^<>\n]{0,2000}>", re.I)
"""A screenshot an issue tracker embeds (`![image](https://user-images.githubusercontent.com/…png)`, `<img width="946"
alt="image" src="…">`): no terminal printed it, and read as words its link is a dozen hashes and `githubusercontent`."""


_HTML_BLOCK = re.compile(r"<(?:pre|code|p)(?:\s+class=\"[^\"\n]{0,100}\")?>|</(?:pre|code|p)>")
_HTML_BREAK = re.compile(r"<br\s*/?>")
"""A traceback copied from a page's source: its `<pre><code>` block, or a paragraph whose lines `<br>` joins."""
_RAY_REPEATED = re.compile(r" ?\[repeated \d{1,9}x across cluster\]$", re.M)
"""Ray's log deduplication marks a line that every worker printed (`… [repeated 7x across cluster]`): not the error's."""


_CURLY_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
"""Quotes typed by a Chinese input method or "smartened" by a blog: error messages use ASCII ones."""
_INLINE_CODE = re.compile(r"^(?P<lead>[ \t]*)`(?!``)(?P<body>[^`\n]+?)`?[ \t]*$", re.M)
_CODE_END = re.compile(r"^(?P<body>[^`\n]+)`[ \t]*$", re.M)
"""A line wrapped in Markdown's inline-code backticks, as people quote an error in an issue or a chat
(`` `OSError: CUDA_HOME environment variable is not set.` ``), or the last line of a quoted block
(`` RuntimeError: Socket Timeout` ``): the backticks are not part of it."""
_WRAPPED_CODE = re.compile(r"^(?P<lead>[ \t]*)`(?!`)(?P<body>[^`\n][^\n]*?[^`\n])`[ \t]*$", re.M)
"""The same, when the quoted line has inline code of its own (`` `ValueError: … Try increasing
`gpu_memory_utilization` or …` ``): only the outer backticks go, and only when what they wrap is an
error line (two code spans in a sentence, `` `a` or `b` ``, are left as they are)."""


def _unwrap_code(m: re.Match[str]) -> str:
    return m.group("lead") + m.group("body") if is_error_line(m.group("body")) else m.group(0)


_ISSUE_TAG = re.compile(
    r"^(?P<lead>[ \t]*)\[(?:bug|bug report|usage|question|help|installation|performance|misc|feature|feature request|"
    r"doc|docs|rfc|new model)\]:? *", re.M | re.I)
"""An issue title's tag, as issue templates make them (`[Bug]: vllm.engine…AsyncEngineDeadError: …`):
the user's label, not part of the error line it comes before."""
_BOLD_LINE = re.compile(r"^(?P<lead>[ \t]*)\*\*(?P<body>[^*\n]+?)\*\*[ \t]*$", re.M)
"""A line in Markdown bold, as a forum post shows its error: `**OSError: [WinError 1455] …**`."""


_COMFY_EXCEPTION = re.compile(r"^(?P<lead>[ \t]*)!!! Exception during processing !!![ \t]*(?P<msg>\S[^\n]*)$", re.M)
"""ComfyUI's report of a failed node (`!!! Exception during processing !!! data did not match any variant of
untagged enum …`), printed above the traceback: the message after it is the exception's, which a paste cut
before the traceback's last line has nowhere else."""


def _comfy_message(m: re.Match[str]) -> str:
    """The message as an error line: as it is when it reads as one (`CUDA error: no kernel image …`), else
    as the `Exception` it was raised as (ComfyUI prints `str(e)`, without the type)."""
    msg = m.group("msg")
    return m.group("lead") + (msg if is_error_line(msg) else "Exception: " + msg)


def _unglue_all(text: str) -> str:
    """`_unglue` on each line where a traceback header comes after other text: found with `str.find`, since
    the regex alone, tried at every line of a 64 KB log, cost 3 ms."""
    out: list[str] = []
    last = 0
    for start, at, end in lines_with(text, _TB):
        if text[start:at].strip():
            out.append(text[last:start])
            out.append(_GLUED_TB.sub(_unglue, text[start:end], count=1))
            last = end
    out.append(text[last:])
    return "".join(out)


def _per_line(text: str, needle: str, *rewrites: tuple[re.Pattern[str], object]) -> str:
    """Each line that holds `needle`, rewritten by each (pattern, replacement) in turn where the pattern matches
    at its start. The patterns are line patterns (`^…$`): tried on the few lines that can match, not at every
    position of a 64 KB paste."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if needle not in line:
            continue
        for rx, repl in rewrites:
            m = rx.match(line)
            if m:
                line = (m.expand(repl) if isinstance(repl, str) else repl(m)) + line[m.end():]
        lines[i] = line
    return "\n".join(lines)


def _unglue(m: re.Match[str]) -> str:
    """A traceback header glued to the end of the line before it, as when a progress bar that
    ends in a carriage return loses it in a copy (`0/1250 [00:00<?, ?it/s][rank2]: Traceback ...`)
    or a logger prints the message and the traceback on one line (vLLM's `Exception in worker …:
    <error>, Traceback (most recent call last):`): the header starts its own line, so the
    traceback under it is parsed as one."""
    head = m.group("head")
    rest = _strip_prefixes(head)[3]
    if not rest.strip() or _strip_prefixes(m.group(0))[3].lstrip().startswith(_TB):
        return m.group(0)  # only log prefixes before the header: it already starts its line
    # The header keeps the line's log prefix (`(VllmWorkerProcess pid=302) ERROR …]`): it belongs to that stream.
    return head + "\n" + head[: len(head) - len(rest)] + m.group("tb")


_STAMP = re.compile(r"[ \t]*\[?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)")
_STAMPED_MIN = 3


def _oldest_first(text: str) -> str:
    """A log copied from a viewer that shows the newest line first (Kibana, Loki, CloudWatch) in the order it
    was written: when its timestamps never go up and do go down, the lines are turned around, so a traceback
    reads header, frames, exception. ISO timestamps compare as strings."""
    lines = text.split("\n")
    stamps: list[str] = []
    for m in map(_STAMP.match, lines):
        if m:
            stamp = m.group(1).replace(",", ".").replace("T", " ")
            if stamps and stamp > stamps[-1]:
                return text  # a stamp goes up: oldest first already
            stamps.append(stamp)
    if len(stamps) < _STAMPED_MIN or stamps[0] == stamps[-1]:
        return text
    return "\n".join(reversed(lines))


_CSV_HEADER = re.compile(
    r"\"?@?(?:timestamp|time|date|datetime|ts)\"?[ \t]*,[^\n]{0,200}?\b@?(?:message|msg|log)\b", re.I)
_CSV_MESSAGE = ("message", "msg", "log")
_CSV_MIN_ROWS = 3


def _csv_messages(text: str) -> str | None:
    """A log exported as CSV (CloudWatch's `timestamp,message`, Logs Insights' `@timestamp,@message`, Datadog's
    `Date,Host,Service,Message`): its message column, a row a line, oldest first when the rows came newest first.
    Read as lines, every line would open with a stamp and a quote, and a message that holds a comma or a quote is
    quoted and its quotes doubled (`File ""/opt/ml/code/train.py"", line 88`). None when it does not parse so."""
    try:
        rows = list(csv.reader(io.StringIO(text.strip())))
    except csv.Error:
        return None
    header = [h.strip().lstrip("@").lower() for h in rows[0]]
    col = next((i for i, h in enumerate(header) if h in _CSV_MESSAGE), None)
    body = [r for r in rows[1:] if r]
    if col is None or len(body) < _CSV_MIN_ROWS or any(len(r) != len(header) for r in body):
        return None
    stamps = [r[0] for r in body]
    if all(a >= b for a, b in zip(stamps, stamps[1:])) and stamps[0] != stamps[-1]:
        body.reverse()  # a viewer's newest-first export
    return "\n".join(r[col].rstrip("\n") for r in body)


def _aws_event_message(line: str) -> str:
    """`aws logs get-log-events --output text` prints `EVENTS<tab>ingestion time<tab>message<tab>timestamp`, and
    `filter-log-events` an event id and the log stream before the message: the message is its last field that is
    not a number."""
    if not line.startswith("EVENTS\t"):
        return line
    fields = [f for f in line.split("\t")[1:] if not f.isdigit()]
    return fields[-1] if fields else ""


_JSON_MESSAGE_MIN = 12


def _json_texts(text: str) -> str | None:
    """A paste that is JSON (one record, or one per line, as structured loggers write): its messages, each on
    its own lines, in order; None if it is not JSON or holds no error. Keys, levels and timestamps are no
    message: a value counts when it holds words (a space) and some length."""
    try:
        records = [json.loads(text)]
    except (ValueError, RecursionError):  # RecursionError: `[[[[…` nested past the parser's stack
        try:
            records = [json.loads(line) for line in text.split("\n") if line.strip()]
        except (ValueError, RecursionError):
            return None
    out: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            if len(v) >= _JSON_MESSAGE_MIN and (" " in v or "\n" in v):
                out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for r in records:
        walk(r)
    if not any("\n" in v or _kw_hit(v.lower()) for v in out):
        return None  # a config or a payload, not a log: read it as it is
    return "\n".join(out)


def as_printed(text: str) -> str:
    """The paste as the terminal printed it, before a browser, an editor or a log shipper changed it: no colour
    codes, NUL bytes or carriage returns, a traceback's escaped newlines undone, no viewer's line numbers, its
    lines oldest first, a CSV export's message column, no zero-width characters, no HTML entities or tags, no
    embedded screenshots or Ray's repeat counts, ASCII quotes. Everything that reads a paste starts from this."""
    if "\x1b" in text:
        text = _ANSI_ESC.sub("", text)
    if "[0m" in text or "[0;" in text:
        text = _ANSI_LOOSE.sub("", text)  # colour codes whose ESC was lost in copy-paste
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.lstrip().startswith(("{", "[")) and text.rstrip().endswith(("}", "]")):
        text = _json_texts(text) or text
        if "\x1b" in text:
            text = _ANSI_ESC.sub("", text)  # a notebook's saved error output keeps its colour codes as JSON escapes
    if "Traceback (most recent call last):\\n', " in text or 'Traceback (most recent call last):\\n", ' in text:
        text = _LISTED_TB.sub(r"\\n", text).replace("['Traceback", "Traceback").replace('["Traceback', "Traceback")
    if "\\n" in text and (_ESCAPED_TB.search(text) or text.count("\\n") >= 3 and "\n" not in text.strip()):
        text = _ESCAPE.sub(_unescape, _ESCAPED_STRING.sub(lambda m: "\n" + m["body"] + "\n", text))
    if _CSV_HEADER.match(text[:400].lstrip()):
        text = _csv_messages(text) or text
    if "EVENTS\t" in text:
        text = "\n".join(map(_aws_event_message, text.split("\n")))
    if text[:12].lstrip()[:1].isdigit():
        text = _drop_gutter(text)
    if text.lstrip(" \t[")[:4].isdigit():
        text = _oldest_first(text)
    if any(c in text for c in _INVISIBLE):
        text = text.translate(_DROP_INVISIBLE)
    if "&" in text and any(e in text for e in _ENTITY_STARTS) and _ENTITY.search(text):
        text = html.unescape(text)
    if "across cluster]" in text:
        text = _RAY_REPEATED.sub("", text)
    if "<br" in text or "<pre" in text or "<code" in text or "</code" in text or "</p>" in text:
        text = _HTML_BREAK.sub("\n", _HTML_BLOCK.sub("", text))
    if "![" in text or "<img" in text or "<IMG" in text:
        text = _IMAGE.sub("", text)
    if "\u2018" in text or "\u2019" in text or "\u201c" in text or "\u201d" in text:
        text = text.translate(_CURLY_QUOTES)
    return text


def _extract(text: str) -> Signature:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = str(text)
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT // 4] + "\n" + text[-(MAX_TEXT * 3 // 4):]
    text = as_printed(text)
    text = typed(text)  # `ValueError : msg`, `RuntimeError：msg`, `valueerror: msg` as Python prints them
    if "`" in text:
        text = _per_line(text, "`", (_INLINE_CODE, r"\g<lead>\g<body>"), (_CODE_END, r"\g<body>"),
                         (_WRAPPED_CODE, _unwrap_code))
    if "[" in text:
        text = _per_line(text, "[", (_ISSUE_TAG, r"\g<lead>"))
    if "!!! Exception" in text:
        text = _per_line(text, "!!! Exception", (_COMFY_EXCEPTION, _comfy_message))
    if "**" in text:
        text = _per_line(text, "**", (_BOLD_LINE, r"\g<lead>\g<body>"))
    text = pythonize(text)  # tracebacks as IPython and rich print them
    if _TB in text:
        text = _unglue_all(text)
    ex = _Extractor()
    feed = ex.feed
    kinds: dict[bytes, int] = {}  # line shape -> _quiet_kind(); log lines repeat their shape with new numbers
    lines = ex.lines = text.split("\n")
    ends: list[int] = []  # total length of lines[:i + 1], computed at the first traceback run
    skip_to = 0
    for pos, raw in enumerate(lines):
        if pos < skip_to:
            continue  # taken by a traceback run
        if ex.odd_busy or raw.startswith(("[rank", "[default", "(")):
            busy = ex.busy_until  # the line may belong to any stream
        else:
            busy = ex.main_busy_until  # an unprefixed line belongs to the main stream
        if pos > busy:
            # No stream is mid-structure: most lines are chatter, decided once per shape.
            if len(raw) > MAX_LINE:
                raw = raw[:MAX_LINE]
            shape = raw.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_0)
            kind = kinds.get(shape)
            if kind is None:
                kind = kinds[shape] = _quiet_kind(raw)
            if ex.announce >= 0 and (kind == _PROSE or kind == _NOISE) and ex.announced(pos, raw):
                continue
            if kind == _PROSE:
                ex.prose.append((pos, raw.strip(), None))
                continue
            if kind == _NOISE:  # log noise still belongs to the pasted span
                if ex.first_log < 0:
                    ex.first_log = pos
                ex.last_log = pos
                continue
            if kind == _BLANK:
                continue
            ex.kw = kind == _PARSE_KW
        else:
            ex.kw = None
        feed(pos, raw)
        if ex.run is not None and pos + 1 < len(lines):
            if not ends:
                ends = list(accumulate(map(len, lines)))
            taken = ex.take_run(text, ends[pos] + pos + 1)  # where the next line starts
            if taken:
                skip_to = pos + 1 + len(taken)
                ex.last_log = skip_to - 1
    return assemble(ex)
