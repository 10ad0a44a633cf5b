"""The state machine of one pass over a paste: tracebacks, chained exceptions, multi-rank streams,
failure summaries and free error lines, collected line by line (kb/signature/scan.py feeds it;
kb/signature/assemble.py turns what it collected into a `Signature`)."""

from __future__ import annotations

import re

from .model import MAX_LINE, MAX_OUT_LINE, _CONT_WINDOW, _FAIL_WINDOW
from .vocab import _GENERIC_COMPONENTS
from .mask import _DIGIT, _MD_LINK, _URL, _WS, _pkg_part
from .prefixes import _PFX_FIRST, _component, _strip_prefixes
from .classify import (
    _ASCII_SEG, _CARET, _CJK, _COMPILER_LOC, _EXC_FREE, _EXC_INLINE, _EXC_TB, _FAIL_FIELD, _FIRST_PERSON, _FRAME,
    _HUMAN, _LOG_VERBS, _MAX_CLASSIFY, _NCCL_AT, _PROSE_EN, _PROSE_HEAD, _RANK_PREFIX, _SEPARATOR, _STRUCTURE,
    _TB_SUFFIX, _TERMINATE, _WARN_FREE, _WARN_LOC, _WHAT, _WORD, _LEAD_IN, _LEAD_IN_SENTENCE, _classify,
    _is_boilerplate, _is_command, _is_noise, _is_quoted_command, _kw_hit, _tb_run_regexes,
)
from .dialects import call_form

_ANNOUNCE_WINDOW = 3
"""Lines after an announcing header within which its message may start (a blank line and a code fence between)."""
_OPENERS = {"[": "]", "(": ")"}
_SENTENCE_START = re.compile(r"[A-Z][a-z]+(?: [a-z]+){2}")
_ANNOUNCES = re.compile(r"(?:error|exception|failure)s?:$", re.I)
_ANNOUNCES_ZH = re.compile(r"(?:报错|错误|异常|如下)[^\s]{0,6}[:\uff1a]$")


_PARAGRAPH = re.compile(r"^(?!.*\d)(?=(?:\S+\s+){29})(?:[^.!?]{20,}[.!?]\s+){2}[A-Z]")
"""A blog's paragraph: thirty words or more, three sentences or more, not a digit among them. No tool prints its
message that way (an OOM message, which has as many words, has sizes), so its `error` is the writer's word."""


class _Exc:
    __slots__ = ("pos", "stream", "type", "message", "chain", "frames", "details", "join_next", "cpp", "ignored",
                 "below")

    def __init__(self, pos: int, stream: str, etype: str, message: str, chain: int, frames: list[str], cpp: bool = False):
        self.pos = pos
        self.stream = stream
        self.type = etype
        self.message = message
        self.chain = chain
        self.frames = frames
        self.details: list[str] = []
        self.join_next = False
        self.cpp = cpp
        self.ignored = False
        self.below = False  # `AssertionError:` and nothing after: Python printed a message that opens with a newline

    def line(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


class _Stream:
    __slots__ = ("in_tb", "after_frame", "frame_indent", "frames", "chain", "chain_next", "cont", "cont_n", "cont_pos",
                 "skip_code", "fail", "fail_pos", "cpp_type", "ignored", "tb_level")

    def __init__(self) -> None:
        self.in_tb = False
        self.after_frame = False
        self.frame_indent = 0
        self.frames: list[str] = []
        self.chain = -1
        self.chain_next = False
        self.cont: _Exc | None = None
        self.cont_n = 0
        self.cont_pos = 0
        self.skip_code = False
        self.fail: str | None = None
        self.fail_pos = 0
        self.cpp_type: str | None = None
        self.ignored = False
        self.tb_level: str | None = None
        """The log level on the traceback's header line: a log that puts it on every line
        (`2026/11/27 05:00:01 ERROR …`) has it on the message's continuation lines too."""


_LIST_MARK = re.compile(r"(?:[-*] +\[[ xX]\] +(?:\d{1,2}[.)] +)?|\(?\d{1,2}[.)] +|[-*\u2022] +)(?=[A-Za-z])")
"""A point of the user's: numbered, bulleted, or ticked in an issue template's checklist (`- [x] 1. I have searched …`)."""
_BRACKETS_AS_PARENS = str.maketrans("[]", "()")


def _balanced(t: str) -> str:
    """A segment cut out of a sentence, without the quotes and brackets around it but with its own
    (`… stored in KV cache (15248)`, `KeyError: 'qwen2'`, `OSError: [WinError 1455]`). A few layers at most:
    each one costs a pass over the segment, and a hostile line nests brackets by the thousand."""
    for _ in range(_MAX_LAYERS):
        t = t.strip(" :;,.<>")
        first, last = t[:1], t[-1:]
        if len(t) > 1 and first == last and first in "\"'`":
            t = t[1:-1]
        elif first and first in "\"'`" and t.count(first) % 2:
            t = t[1:]
        elif last and last in "\"'`" and t.count(last) % 2:
            t = t[:-1]
        elif first in _CLOSING and (t.count(first) > t.count(_CLOSING[first]) or _wraps(t)):
            t = t[1:-1] if _wraps(t) else t[1:]
        elif last in _OPENING and t.count(last) > t.count(_OPENING[last]):
            t = t[:-1]
        else:
            break
    return t


_MAX_LAYERS = 6
_CLOSING = {"(": ")", "[": "]"}
_OPENING = {close: opening for opening, close in _CLOSING.items()}


def _wraps(t: str) -> bool:
    """True when the bracket opening `t` is the one closing it."""
    close = _CLOSING.get(t[:1])
    if close is None or t[-1:] != close:
        return False
    depth = 0
    for i, ch in enumerate(t):
        depth += (ch == t[0]) - (ch == close)
        if depth == 0:
            return i == len(t) - 1
    return False


class _Extractor:
    """One pass over the lines of a paste, keeping per-stream traceback state."""

    def __init__(self) -> None:
        self.streams: dict[str, _Stream] = {}
        self.excs: list[_Exc] = []
        self.signals: list[tuple[int, int, int, str]] = []  # (cat, sub, pos, line)
        self.warn_excs: list[tuple[int, str, str]] = []  # (pos, type, msg)
        self.comp_scores: dict[str, float] = {}
        self.comp_last: dict[str, int] = {}
        self.orphan_frames: list[tuple[int, list[str]]] = []
        self.hints: dict[str, float] = {}
        self.active: dict[str, int] = {}  # stream key -> line up to which it is mid-structure
        self.lines: list[str] = []  # the paste's lines: its last ones say where a hang stopped
        self.busy_until = -1
        self.main_busy_until = -1
        self.odd_busy = False
        self.odd_active = 0  # active keys whose lines can't be told apart cheaply (see feed)
        self.cur_key = ""
        self.cur_st: _Stream | None = None
        self.cur_pos = 0
        self.frame_cache: dict[str, str] = {}
        self.mask_cache: dict[str, str] = {}
        self.class_cache: dict[tuple[str, str | None, bool | None], tuple[int, int] | None] = {}
        self.prose: list[tuple[int, str, bool | None]] = []  # (pos, text, strong; None = decide later)
        self.kw: bool | None = None  # keyword gate of the current raw line, when already known
        self.first_log = -1
        self.last_log = -1
        self.chains = 0
        self.run: tuple[str, int] | None = None  # (line prefix, frame indent) after a frame line
        self.announce = -1  # line of a header whose message starts below it (`Failed test … with exception:`)

    # -- helpers -----------------------------------------------------------
    def _comp(self, comp: str | None, w: float, pos: int) -> None:
        if not comp:
            return
        if comp.startswith(_GENERIC_COMPONENTS):
            w *= 0.25
        self.comp_scores[comp] = self.comp_scores.get(comp, 0.0) + w
        self.comp_last[comp] = max(self.comp_last.get(comp, -1), pos)

    def _hint(self, comp: str, pos: int) -> None:
        """Log-prefix hints (logger names, glog files) add up to at most 1.0 per component."""
        old = self.hints.get(comp, 0.0)
        if old < 1.0:
            self.hints[comp] = old + 0.25
            self._comp(comp, 0.25, pos)

    def _tb_comps(self, frames: list[str], w: float, pos: int) -> None:
        """Score one traceback's components: each once, inner frames (nearer the error) weigh more."""
        last: dict[str, int] = {}
        for i, c in enumerate(frames):
            if c:
                last[c] = i
        order = sorted(last, key=last.__getitem__)
        n = len(order)
        for i, c in enumerate(order):
            self._comp(c, w * (0.5 + 0.5 * (i + 1) / n), pos - n + i)

    def _classify_cached(self, body: str, level: str | None, kw: bool | None = None) -> tuple[int, int] | None:
        """_classify(), once per distinct line: every rank prints the same error."""
        k = (body, level, kw)
        try:
            return self.class_cache[k]
        except KeyError:
            out = self.class_cache[k] = _classify(body, level, kw)
            return out

    def _signal(self, cat: int, sub: int, pos: int, line: str) -> None:
        self.signals.append((cat, sub, pos, line))

    def _new_exc(self, st: _Stream, key: str, pos: int, etype: str, msg: str | None, cpp: bool = False) -> _Exc:
        if st.chain_next and st.chain >= 0:
            chain = st.chain
        else:
            self.chains += 1
            chain = self.chains
        st.chain = chain
        st.chain_next = False
        rec = _Exc(pos, key, etype, (msg or "").strip(), chain, st.frames, cpp)
        st.cont_pos = pos
        rec.ignored = st.ignored
        st.ignored = False
        st.frames = []
        self.excs.append(rec)
        st.cont = rec
        st.cont_n = 0
        return rec

    # -- main loop ---------------------------------------------------------
    def feed(self, pos: int, raw: str) -> None:
        """Process one line; keep track of which streams are mid-structure (traceback, message, summary)."""
        self._feed(pos, raw)
        st = self.cur_st
        if st is None:
            return
        if st.in_tb or st.skip_code or st.cpp_type:
            until = 1 << 62
        elif st.fail is not None:
            until = st.fail_pos + _FAIL_WINDOW
        elif st.cont is not None:
            until = st.cont_pos + _CONT_WINDOW
        else:
            until = -1
        active = self.active
        key = self.cur_key
        if until >= 0:
            old = active.get(key)
            if old == until:
                return
            if old is None and key[:1] in "hs":
                self.odd_active += 1
            active[key] = until
        elif key in active:
            del active[key]
            if key[:1] in "hs":
                self.odd_active -= 1
        else:
            return
        self.busy_until = max(active.values()) if active else -1
        self.main_busy_until = active.get("", -1)
        self.odd_busy = self.odd_active > 0  # pdsh/srun streams: no cheap way to tell a line's stream

    def _feed(self, pos: int, raw: str) -> None:
        if len(raw) > MAX_LINE:
            raw = raw[:MAX_LINE]
        if raw[:1] in " \t" and raw.lstrip()[:5] == "[rank":
            key, level, comp, s = _strip_prefixes(raw.lstrip())  # a log indented as a Markdown code block
        elif raw[:1] in _PFX_FIRST and (raw[0] != " " or raw[1:5].lstrip(" ")[:1].isdigit()):
            key, level, comp, s = _strip_prefixes(raw)  # (an indented line can only be srun's padded ` 3: `)
        else:
            key, level, comp, s = "", None, None, raw
        ls = s.lstrip()
        st = self.streams.get(key)
        if st is None:
            st = self.streams[key] = _Stream()
        self.cur_key = key
        self.cur_st = st
        self.cur_pos = pos
        if not ls:
            if st.cont is not None and st.cont.message:
                st.cont = None
            return
        body = ls.rstrip()
        indent = len(s) - len(ls)
        prev_last = self.last_log
        if self.first_log < 0:
            self.first_log = pos
        self.last_log = pos  # undone below for prose lines
        if comp:
            self._hint(comp, pos)

        # --- tracebacks (hot path: frames and source lines) ---
        if st.in_tb:
            if body.startswith('File "'):
                m = _FRAME.match(body)
                if m:
                    self._frame(st, m.group("path"))
                    st.after_frame = True
                    st.frame_indent = indent
                    prefix = raw[: len(raw) - len(s)]
                    if indent and (not prefix or _RANK_PREFIX.fullmatch(prefix)):
                        self.run = (prefix, indent)  # the caller may take the frames that follow in one match
                    return
            if st.after_frame and indent > st.frame_indent:
                return  # source line under a frame, or ^^^^ markers
            if _CARET.match(body) or body.startswith(("[Previous line repeated", "...")):
                return
        c0 = body[0]
        if c0 in "TDE" and body.startswith(_STRUCTURE):
            self.announce = -1
            if body.startswith("Traceback (most recent call last)"):
                self._start_tb(st, level)
            elif body.startswith("Exception ignored in"):
                st.ignored = True  # unraisable exception from __del__: never the root cause
                st.cont = None
            else:
                st.chain_next = True
                st.cont = None
            return
        if st.in_tb:
            m = _EXC_TB.match(body)
            if m and self._tb_type_ok(m.group("type"), m.group("msg")):
                st.in_tb = False
                st.after_frame = False
                self._exception(st, key, pos, m.group("type"), m.group("msg"), indent)
                return
            st.in_tb = False
            st.after_frame = False
            self._flush_frames(st, pos)
        if body.startswith("```"):
            return
        announced = self._take_announce(pos) and not key

        # --- continuation of an exception message (it follows within a few lines) ---
        if st.cont is not None:
            if pos - st.cont_pos > _CONT_WINDOW:
                st.cont = None
            elif self._continuation(st, body, level, indent):
                return

        # --- torchrun failure summary ---
        if c0 == "R" and body.startswith("Root Cause (first observed failure)"):
            st.fail = "root"
            st.fail_pos = pos
            return
        if body == "Failures:":
            st.fail = "other"
            st.fail_pos = pos
            return
        if st.fail is not None:
            if pos - st.fail_pos > _FAIL_WINDOW:
                st.fail = None  # a torchrun summary is short; never let a truncated one swallow the rest
            elif self._failure_field(st, key, pos, body):
                return
        if st.skip_code:
            st.skip_code = False
            if indent > 0:
                return

        # --- everything else ---
        if (level == "INFO" or level == "DEBUG") and "Error" not in body:
            return  # INFO chatter
        cjk = not body.isascii() and _CJK.search(body) is not None
        if cjk and level is None and not key:
            self._mixed_line(st, key, pos, body)
            self._unlog(pos, prev_last)
            if body[-1] in ":\uff1a" and _ANNOUNCES_ZH.search(body):
                self.announce = pos
            return
        if self._free_line(st, key, pos, body, level, indent) or cjk:
            return
        if announced and level is None and self._announced_message(pos, body):
            return
        if body[-1] == ":" and not key and (_LEAD_IN.match(body) or _LEAD_IN_SENTENCE.match(body)):
            self.announce = pos  # "I got the following error:", the error on the next line
        # Not a signal: user prose or log noise.
        if level is None and not key and indent < 4 and self.prose_like(body):
            self.prose.append((pos, body, None))
            self._unlog(pos, prev_last)

    def _unlog(self, pos: int, prev_last: int) -> None:
        """A prose line is not part of the pasted log span."""
        self.last_log = prev_last
        if self.first_log == pos:
            self.first_log = -1

    def _start_tb(self, st: _Stream, level: str | None = None) -> None:
        self._flush_frames(st, -1)
        st.tb_level = level
        st.in_tb = True
        st.after_frame = False
        st.frames = []
        st.cont = None

    def _flush_frames(self, st: _Stream, pos: int) -> None:
        if st.frames:
            self.orphan_frames.append((pos, st.frames))
            st.frames = []

    def take_run(self, text: str, start: int) -> list[str]:
        """Frame and source lines from `start` that the per-line rules would treat alike; return them.

        Why: a deep traceback is most of a paste's lines; one regex match
        takes them all, with the same effect as feeding them one by one.
        """
        prefix, indent = self.run  # type: ignore[misc]
        self.run = None
        run_rx, frame_rx = _tb_run_regexes(prefix, indent)
        m = run_rx.match(text, start)
        if m is None or m.end() == start:
            return []
        block = m.group(0)
        st = self.cur_st
        assert st is not None
        for path in frame_rx.findall(block):
            self._frame(st, path)
        return block.split("\n")[:-1]

    def _frame(self, st: _Stream, path: str) -> None:
        """A traceback frame: note its library component (paths repeat, so each is worked out once)."""
        c = self.frame_cache.get(path)
        if c is None:
            part = _pkg_part(path)
            c = self.frame_cache[path] = (_component(part) or "") if part else ""
        if c:
            st.frames.append(c)

    @staticmethod
    def _tb_type_ok(etype: str, msg: str | None) -> bool:
        if msg is not None or "." in etype:
            return True
        return etype.endswith(_TB_SUFFIX) or etype in ("KeyboardInterrupt", "StopIteration", "SystemExit")

    def _exception(self, st: _Stream, key: str, pos: int, etype: str, msg: str | None, indent: int) -> None:
        if etype.endswith("Warning") and not st.frames and not st.chain_next:
            self._warning(pos, etype, msg or "")
            return
        rec = self._new_exc(st, key, pos, etype, msg)
        if rec.message:
            rec.message = rec.message[:MAX_OUT_LINE]
        else:
            rec.below = msg is not None  # a colon and nothing after it
        st.skip_code = False

    def _warning(self, pos: int, etype: str, msg: str) -> None:
        line = f"{etype}: {msg}" if msg else etype
        self._signal(5, 0, pos, line)
        self.warn_excs.append((pos, etype, msg))

    def _continuation(self, st: _Stream, body: str, level: str | None, indent: int) -> bool:
        """Handle a line after an exception line; False if it starts something new."""
        rec = st.cont
        assert rec is not None
        if (
            (level is not None and level != st.tb_level)
            or body.startswith('File "')
            or body.startswith("Root Cause (first observed failure)")
            or body == "Failures:"
            or st.cont_n > 24
        ):
            st.cont = None
            return False
        if _SEPARATOR.match(body):
            if rec.type.endswith("ChildFailedError"):
                st.fail = st.fail or "pending"
                st.fail_pos = self.cur_pos
            elif st.fail is not None and body.startswith("="):
                st.fail = None  # the summary's closing rule, right after its embedded traceback
            st.cont = None
            return True
        st.cont_n += 1
        if rec.join_next:
            rec.join_next = False
            if rec.details:
                rec.details[-1] = rec.details[-1] + " " + body
            else:
                rec.details.append(body)
            return True
        if not rec.message:
            if indent > 0 or rec.cpp or (
                    rec.below and st.cont_n == 1 and self._classify_cached(body, None) is None
                    and not self.users_sentence(body)):
                rec.message = body[:MAX_OUT_LINE]
                return True
            if rec.type.endswith("ChildFailedError"):
                return True  # "train.py FAILED" etc.
        if _is_boilerplate(body):
            return True
        if body.endswith("Last error:"):
            rec.details.append(body)
            rec.join_next = True
            return True
        if body[0].isalpha() and _EXC_FREE.match(body) and not body.startswith(("nccl", "cuda")):
            # A new, separate exception (e.g. a second rank's error without a traceback).
            st.cont = None
            return False
        if indent == 0 and not rec.cpp and self.users_sentence(body):
            st.cont = None  # the user's sentence right under the error ("I saw this error occurs in …")
            return False
        if self._classify_cached(body, None) is not None:
            rec.details.append(body[:MAX_OUT_LINE])
            return True
        if indent > 0 or rec.cpp or not body[0].isalpha():
            return True  # indented message body / C++ frames: part of the message, no signal
        # An unindented plain line: probably the log going on.
        st.cont = None
        return False

    def _failure_field(self, st: _Stream, key: str, pos: int, body: str) -> bool:
        if _SEPARATOR.match(body):
            if body.startswith("="):
                st.fail = None
            return True
        if body.startswith("[") and body.endswith("]:") or body.startswith("<NO_OTHER_FAILURES>"):
            return True
        m = _FAIL_FIELD.match(body)
        if not m:
            if st.fail == "pending" and body.endswith("FAILED"):
                return True
            return False
        k, v = m.group("k"), m.group("v").strip()
        root = st.fail == "root"
        if k == "exitcode":
            self._signal(3 if root else 4, 4 if root else 3, pos, f"exitcode: {v}")
        elif k == "error_file":
            if v and v != "<N/A>":
                self._signal(4, 7, pos, f"error_file: {v}")
        elif k == "traceback":
            if v.startswith("Traceback (most recent call last)"):
                self._start_tb(st)
            elif v and not _is_boilerplate(v):
                self._signal(3 if root else 4, 0 if root else 3, pos, v)
        return True

    def _mixed_line(self, st: _Stream, key: str, pos: int, body: str) -> None:
        """A CJK line: the words are prose; embedded English errors are signals."""
        prose = body
        found = False
        for m in _ASCII_SEG.finditer(body):
            seg = m.group(0)
            t = _balanced(seg)
            if len(t) < 12:
                continue
            first = seg.lstrip(" :")[:1]  # `错误提示:"The model's max seq len …"`: quoted after a colon
            before = body[m.start() - 1] if m.start() else ""
            quoted = (first != "" and first in "\"'`") or (before != "" and before in "\u201c\u300c\u300e\u2018")
            if self._free_line(st, key, pos, t, None, 0, inline=True) or (
                quoted and len(_WORD.findall(t)) >= 3 and not _is_quoted_command(t) and self._add_quoted(pos, t)
            ):
                prose = prose.replace(seg, " ", 1)
                found = True
        if found:
            prose = _WS.sub(" ", prose).strip()
        self.prose.append((pos, prose, True))

    def _add_quoted(self, pos: int, t: str) -> bool:
        self._signal(4, 4, pos, t[:MAX_OUT_LINE])
        return True

    def _free_line(self, st: _Stream, key: str, pos: int, body: str, level: str | None, indent: int,
                   inline: bool = False) -> bool:
        """Classify a line outside any traceback; True if it produced a signal."""
        if self.kw is not None and not inline:
            kw = self.kw  # computed by the fast path of the main loop
        else:
            kw = _kw_hit(body.lower() if len(body) <= _MAX_CLASSIFY else body[:_MAX_CLASSIFY].lower())
        if not kw:
            # Every pattern below contains a keyword; only a log level can still make this a signal.
            if level is None or level == "INFO" or level == "DEBUG":
                return False
            cls = self._classify_cached(body, level, False)
            if cls is None:
                return False
            self._signal(cls[0], cls[1], pos, body[:MAX_OUT_LINE])
            return True
        c0 = body[0]
        if c0.isalpha() or c0 == "_":
            if (level not in ("INFO", "DEBUG") or "Error" in body) and (
                "Error" in body
                or "Exception" in body
                or "Exit" in body
                or "Interrupt" in body
                or "Failure" in body
                or "Fault" in body
            ):
                m = _EXC_FREE.match(body)
                if m:
                    etype = m.group("type")
                    self._exception(st, key, pos, etype, m.group("msg"), indent)
                    return True
            if "Warning" in body:
                m = _WARN_FREE.match(body)
                if m:
                    self._warning(pos, m.group("type"), (m.group("msg") or "").strip())
                    return True
        if "Warning: " in body:
            m = _WARN_LOC.match(body)
            if m:
                part = _pkg_part(m.group("loc"))
                if part:
                    self._comp(_component(part), 1.0, pos)
                self._warning(pos, m.group("type"), m.group("msg").strip())
                st.skip_code = True
                return True
        if "terminate called" in body:
            m = _TERMINATE.search(body)
            if m:
                st.cpp_type = m.group("t")
                self._signal(4, 0, pos, body)
                return True
        if body.startswith("what()"):
            m = _WHAT.match(body)
            if m:
                msg = m.group("m").strip()
                if st.cpp_type:
                    self._new_exc(st, key, pos, st.cpp_type, msg, cpp=True)
                    st.cpp_type = None
                else:
                    self._signal(3, 0, pos, f"what(): {msg}")
                return True
        if "NCCL " in body:
            m = _NCCL_AT.search(body)
            if m:
                if "NCCL INFO" in body:
                    low = body.lower()
                    if not ("error" in low or "fail" in low or "abort" in low or "timeout" in low):
                        return False
                body = body[m.start():]
        if ": " in body and ("error" in body or "undefined reference" in body or "warning:" in body):
            m = _COMPILER_LOC.match(body)
            if m:
                body = body[m.end():]
                if body.startswith(("warning:", "note:")):
                    return False
        if (
            not inline
            and level is None
            and c0.isalpha()
            and ("Error: " in body or "Exception: " in body)
            and self._inline_exception(st, key, pos, body)
        ):
            return True
        if not inline and level is None and c0.isalpha() and "(" in body and self._call_exception(st, key, pos, body):
            return True
        if not inline and level is None and not key and indent < 4:
            if ": " in body and self._after_lead_in(st, key, pos, body):
                return True
            if self.users_sentence(body):
                return False  # the user's own sentence ("training hangs after the first step, here is the log:")
        cls = self._classify_cached(body, level, True)
        if cls is None:
            return False
        self._signal(cls[0], cls[1], pos, body[:MAX_OUT_LINE])
        if not inline and not key and body[-1] == ":" and _ANNOUNCES.search(body):
            self.announce = pos
        return True

    def announced(self, pos: int, raw: str) -> bool:
        """A line the driver would drop as chatter: the message under an announcing header, if it is one."""
        body = raw.strip()
        if body.startswith("```"):
            return False  # the fence between the header and its message
        return self._take_announce(pos) and self._announced_message(pos, body)

    def _take_announce(self, pos: int) -> bool:
        """Whether an announcing header came just before line `pos`; either way, it is used up."""
        at, self.announce = self.announce, -1
        return 0 <= at and pos - at <= _ANNOUNCE_WINDOW

    def _announced_message(self, pos: int, body: str) -> bool:
        """The line under a header that announces it (`Failed test at stage construct_inputs with exception:`,
        `I got the following error:`): the message itself, even with no error word in it (`Asking to pad but
        the tokenizer does not have a padding token.`), which may say "please" like a person. Not the user's own
        sentence ("I think …", a question), a log line, and no frame, command or code: a message opens as a
        sentence does."""
        if not _SENTENCE_START.match(body) or _FIRST_PERSON.match(body) or _LOG_VERBS.match(body) or (
                body.endswith("?") or _is_noise(body) or _is_boilerplate(body)):
            return False
        self._signal(4, 4, pos, body[:MAX_OUT_LINE])
        return True

    def _call_exception(self, st: _Stream, key: str, pos: int, body: str) -> bool:
        """'… I got a ValueError(Attempting to unscale FP16 gradients). It's obvious …' -> prose + exception."""
        found = call_form(body)
        if found is None:
            return False
        start, end, etype, msg = found
        head, tail = body[:start].strip(), body[end:].strip(" .,;")
        if head and not _PROSE_HEAD.match(head):
            return False
        if head or tail:
            self.prose.append((pos, f"{head} {tail}".strip(), True))
        self._new_exc(st, key, pos, etype, msg)
        return True

    def _after_lead_in(self, st: _Stream, key: str, pos: int, body: str) -> bool:
        """'Hi, I'm having this issue: Watchdog caught collective operation timeout: …': the user's words, then
        the error on the same line. True if the part after the first colon reads as an error on its own."""
        head, _, rest = body.partition(": ")
        rest = rest.strip()
        if len(rest) < 20 or not rest[0].isupper() or not self.users_sentence(head):
            return False
        if not self._free_line(st, key, pos, rest, None, 0, inline=True):
            return False
        self.prose.append((pos, head, True))
        return True

    def _inline_exception(self, st: _Stream, key: str, pos: int, body: str) -> bool:
        """'How do I fix RuntimeError: CUDA error: ...?' -> prose + exception."""
        m = _EXC_INLINE.search(body)
        if not m or m.start() == 0:
            return False
        head = body[: m.start()].strip()
        rest = body[m.end():]
        if head[-1:] in _OPENERS and _OPENERS[head[-1]] in rest:
            # '… will trigger a "[ValueError : Attemting to unscale fp16 Gradients]" error.': a bracket around it
            rest, tail = rest.split(_OPENERS[head[-1]], 1)
            head = f"{head[:-1].rstrip()} {tail.strip()}".strip()
        if not _PROSE_HEAD.match(head or "x"):
            return False
        quote = head[-1:]
        if quote and quote in "`'\"" and quote in rest:
            # "… fail due to a `RuntimeError: CUDA error: invalid device ordinal` error.": the quoted part
            rest, tail = rest.split(quote, 1)
            head = f"{head[:-1].rstrip()} {tail.strip()}".strip()
        if head:
            self.prose.append((pos, head, True))
        self._new_exc(st, key, pos, m.group("type"), rest)
        return True

    @classmethod
    def users_sentence(cls, body: str) -> bool:
        """A sentence a person wrote ('here is the log:', 'I saw this error occurs in …'), not a log line. One that
        opens in the first person ('I am using accelerate==0.33.0 … but got error below') is, whatever code it names."""
        return (cls.prose_like(body) and (_HUMAN.search(body) is not None or _PARAGRAPH.search(body) is not None)) or (
            _FIRST_PERSON.match(body) is not None and len(body.split()) >= 6)

    @staticmethod
    def prose_like(body: str) -> bool:
        """Plain words, not a log message: 'Any idea what causes this?' (not 'Loading model...'). A link the
        user cites ('as in https://github.com/NVIDIA/apex/issues/865', or a Markdown link) does not make a
        sentence a log line."""
        if "://" in body:
            body = _MD_LINK.sub(r"\1", _URL.sub("link", body))
        if len(body) < 8 or body.count("_") > 1 or body.count("/") > 1 or body.endswith("..."):
            return False  # the cheap tests first: each one alone rules a line out
        if len(_DIGIT.findall(body)) * 6 >= len(body) or len(body.split()) < 3:
            return False
        # A numbered point of the user's ("1) After removing …, I got a [nan.0] value"): brackets read as parentheses.
        body = _LIST_MARK.sub("", body, count=1).translate(_BRACKETS_AS_PARENS)
        return _PROSE_EN.match(body) is not None and _LOG_VERBS.match(body) is None
