"""`extract()`: one pass over a paste, tracebacks and chains and multi-rank streams, to its `Signature`."""

from __future__ import annotations

from itertools import accumulate, islice

from .model import (
    MAX_COMPONENTS, MAX_LINE, MAX_OUT_LINE, MAX_PROSE, MAX_SIGNAL_LINES, MAX_TEXT, MAX_WARNING_LINES,
    Signature, _CONT_WINDOW, _FAIL_WINDOW,
)
from .vocab import _GENERIC_COMPONENTS, _LIBS, _WRAPPERS
from .mask import _ANSI_ESC, _DIGIT, _WS, _pkg_part, mask
from .prefixes import _ANSI_LOOSE, _PFX_FIRST, _component, _strip_prefixes
from .classify import (
    _ASCII_SEG, _CARET, _CJK, _COMPILER_LOC, _EXC_FREE, _EXC_INLINE, _EXC_TB, _FAIL_FIELD, _FRAME,
    _HUMAN, _LOG_VERBS, _MAX_CLASSIFY, _NCCL_AT, _PROSE_EN, _RANK_PREFIX, _SEPARATOR, _STRUCTURE,
    _TAIL_OK, _TB_SUFFIX, _TERMINATE, _WARN_FREE, _WARN_LOC, _WHAT, _WORD, _classify, _is_boilerplate,
    _is_noise, _kw_hit, _tb_run_regexes,
)


class _Exc:
    __slots__ = ("pos", "stream", "type", "message", "chain", "frames", "details", "join_next", "cpp", "ignored")

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

    def line(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


class _Stream:
    __slots__ = ("in_tb", "after_frame", "frame_indent", "frames", "chain", "chain_next", "cont", "cont_n", "cont_pos",
                 "skip_code", "fail", "fail_pos", "cpp_type", "ignored")

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
        if raw[:1] in _PFX_FIRST:
            key, level, comp, s = _strip_prefixes(raw)
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
            if body.startswith("Traceback (most recent call last)"):
                self._start_tb(st)
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
            return
        if self._free_line(st, key, pos, body, level, indent) or cjk:
            return
        # Not a signal: user prose or log noise.
        if level is None and not key and indent < 4 and self.prose_like(body):
            self.prose.append((pos, body, None))
            self._unlog(pos, prev_last)

    def _unlog(self, pos: int, prev_last: int) -> None:
        """A prose line is not part of the pasted log span."""
        self.last_log = prev_last
        if self.first_log == pos:
            self.first_log = -1

    def _start_tb(self, st: _Stream) -> None:
        self._flush_frames(st, -1)
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
            level is not None
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
            if indent > 0 or rec.cpp:
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
            t = seg.strip(" \"'`:;,.()[]<>")
            if len(t) < 12:
                continue
            first = seg.lstrip()[:1]
            before = body[m.start() - 1] if m.start() else ""
            quoted = (first != "" and first in "\"'`") or (before != "" and before in "\u201c\u300c\u300e\u2018")
            if self._free_line(st, key, pos, t, None, 0, inline=True) or (
                quoted and len(_WORD.findall(t)) >= 3 and self._add_quoted(pos, t)
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
        if not inline and level is None and not key and indent < 4 and self.prose_like(body) and _HUMAN.search(body):
            return False  # the user's own sentence ("training hangs after the first step, here is the log:")
        cls = self._classify_cached(body, level, True)
        if cls is None:
            return False
        self._signal(cls[0], cls[1], pos, body[:MAX_OUT_LINE])
        return True

    def _inline_exception(self, st: _Stream, key: str, pos: int, body: str) -> bool:
        """'How do I fix RuntimeError: CUDA error: ...?' -> prose + exception."""
        m = _EXC_INLINE.search(body)
        if not m or m.start() == 0:
            return False
        head = body[: m.start()].strip()
        if not _PROSE_EN.match(head or "x"):
            return False
        if head:
            self.prose.append((pos, head, True))
        rest = body[m.end():]
        self._new_exc(st, key, pos, m.group("type"), rest)
        return True

    @staticmethod
    def prose_like(body: str) -> bool:
        """Plain words, not a log message: 'Any idea what causes this?' (not 'Loading model...')."""
        if len(body) < 8 or body.count("_") > 1 or body.count("/") > 1 or body.endswith("..."):
            return False  # the cheap tests first: each one alone rules a line out
        if len(_DIGIT.findall(body)) * 6 >= len(body) or len(body.split()) < 3:
            return False
        return _PROSE_EN.match(body) is not None and _LOG_VERBS.match(body) is None

    def _tail_lines(self) -> list[tuple[tuple[int, int, int], str]]:
        """No error at all (a hang): the last log lines say where it stopped."""
        prose_pos = {p for p, _, _ in self.prose}
        out: list[tuple[tuple[int, int, int], str]] = []
        lines = self.lines
        last = islice((p for p in range(len(lines) - 1, -1, -1) if lines[p]), 8)
        for pos in last:
            raw = lines[pos]
            if pos in prose_pos:
                continue
            _, _, _, rest = _strip_prefixes(raw[:MAX_LINE])
            body = rest.strip()
            if len(body) < 8 or _is_noise(body) or _is_boilerplate(body):
                continue
            if not _TAIL_OK.match(body) or " = " in body or body.endswith(":"):
                continue  # shell commands, code and config (an article's fix block) say nothing about a hang
            out.append(((6, 0, -pos), body[:MAX_OUT_LINE]))
            if len(out) >= 2:
                break
        return out

    # -- result -------------------------------------------------------------
    def result(self) -> Signature:
        for st in self.streams.values():
            self._flush_frames(st, 10**9)
        excs = self.excs
        primary: _Exc | None = None
        if excs:
            real = [e for e in excs if not e.ignored] or excs
            primary = real[-1]
            if primary.type in _WRAPPERS or primary.type.endswith(".ChildFailedError"):
                child = primary.type.endswith("ChildFailedError")
                cands = [
                    e
                    for e in real
                    if e.type not in _WRAPPERS
                    and not e.type.endswith(".ChildFailedError")
                    and (child or e.chain != primary.chain)
                ]
                if cands:
                    primary = cands[-1]

        ranked: list[tuple[tuple[int, int, int], str]] = []
        if primary is not None:
            ranked.append(((0, 0, 0), primary.line()))
            for i, d in enumerate(primary.details):
                ranked.append(((1, 0, i), d))
            others = [e for e in excs if e is not primary]
            same = [e for e in others if e.chain == primary.chain and e.stream == primary.stream]
            rest = [e for e in others if not (e.chain == primary.chain and e.stream == primary.stream)]
            order = sorted(same, key=lambda e: -e.pos) + sorted(rest, key=lambda e: -e.pos)
            for i, e in enumerate(order):
                ranked.append(((2, 0, i), e.line()))
                for d in e.details:
                    ranked.append(((3, 5, e.pos), d))
        for cat, sub, pos, line in self.signals:
            ranked.append(((cat, sub, pos), line))
        if not ranked:
            ranked = self._tail_lines()
        ranked.sort(key=lambda t: t[0])

        lines: list[str] = []
        templates: list[str] = []
        seen: set[str] = set()
        n_warn = 0
        for (cat, _, _), line in ranked:
            line = " ".join(line.split())[:MAX_OUT_LINE]
            if not line:
                continue
            if cat == 5:
                if n_warn >= MAX_WARNING_LINES:
                    continue
            t = self.mask_cache.get(line)
            if t is None:
                t = self.mask_cache[line] = mask(line)
            if t in seen:
                continue
            seen.add(t)
            if cat == 5:
                n_warn += 1
            lines.append(line)
            templates.append(t)
            if len(lines) >= MAX_SIGNAL_LINES:
                break

        exception: str | None = None
        message: str | None = None
        if primary is not None:
            exception = primary.type
            message = _WS.sub(" ", primary.message).strip() or None
        elif self.warn_excs:
            _, exception, msg = self.warn_excs[-1]
            message = _WS.sub(" ", msg).strip() or None

        # Components: frames of the primary chain weigh most, generic torch internals least.
        if primary is not None:
            ex_comp = _exc_module_component(primary.type)
            if ex_comp:
                self._comp(ex_comp, 1.5 if "." in ex_comp else 0.3, primary.pos)
        for e in excs:
            w = 2.0 if (primary is not None and e.chain == primary.chain and e.stream == primary.stream) else 1.0
            self._tb_comps(e.frames, w, e.pos)
            if e is not primary:
                self._comp(_exc_module_component(e.type), 0.5, e.pos)
        for p, frames in self.orphan_frames:
            self._tb_comps(frames, 1.0, max(p, 0))
        comps = sorted(self.comp_scores, key=lambda c: (-self.comp_scores[c], -self.comp_last[c]))

        # Prose: user's words around the paste (or clearly human lines inside it).
        prose_parts: list[str] = []
        seen_p: set[str] = set()
        for pos, text, strong in self.prose:
            if not text:
                continue
            inside = self.first_log >= 0 and self.first_log < pos < self.last_log
            if inside and not (strong or (strong is None and _HUMAN.search(text))):
                continue
            text = _WS.sub(" ", text).strip()
            if not text or text in seen_p:
                continue
            seen_p.add(text)
            prose_parts.append(text)
        prose = "\n".join(prose_parts)[:MAX_PROSE]

        return Signature(
            exception=exception,
            message=message,
            lines=tuple(lines),
            templates=tuple(templates),
            components=tuple(comps[:MAX_COMPONENTS]),
            prose=prose,
        )


def _exc_module_component(etype: str) -> str | None:
    """'torch.distributed.elastic.multiprocessing.errors.ChildFailedError' -> 'torch.distributed.elastic'."""
    if "." not in etype:
        return None
    mods = etype.split(".")[:-1]
    if mods[0] not in _LIBS:
        return None
    return ".".join(mods[:3])


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


def _extract(text: str) -> Signature:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = str(text)
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT // 4] + "\n" + text[-(MAX_TEXT * 3 // 4):]
    if "\x1b" in text:
        text = _ANSI_ESC.sub("", text)
    if "[0m" in text or "[0;" in text:
        text = _ANSI_LOOSE.sub("", text)  # colour codes whose ESC was lost in copy-paste
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
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
    return ex.result()
