"""The last step of extraction: from the lines one pass collected (kb/signature/extractor.py) to a `Signature`."""

from __future__ import annotations

import re
from itertools import islice

from .model import MAX_COMPONENTS, MAX_LINE, MAX_OUT_LINE, MAX_PROSE, MAX_SIGNAL_LINES, MAX_WARNING_LINES, Signature
from .vocab import _GENERIC_CALLS, _LIBS, _POINTS_ELSEWHERE, _WRAPPERS
from .mask import _WS, _pkg_part, mask
from .prefixes import _strip_prefixes
from ..text import EAST_ASIAN
from .classify import _CARET, _FRAME, _HUMAN, _TAIL_OK, _is_boilerplate, _is_noise
from .extractor import _Exc, _Extractor


def assemble(ex: _Extractor) -> Signature:
    """The signature from what one pass collected: the primary exception first (the real error
    under launcher wrappers and `ChildFailedError`), then the other exceptions and signal lines,
    deduplicated by template; components weighted by the primary chain; the user's own words."""
    for st in ex.streams.values():
        ex._flush_frames(st, 10**9)
    excs = ex.excs
    primary: _Exc | None = None
    if excs:
        real = [e for e in excs if not e.ignored] or excs
        primary = real[-1]
        if not primary.message:  # a bare type (`…但是会出现RuntimeError`) names one the paste gave with its message
            primary = next((e for e in reversed(real) if e.type == primary.type and e.message), primary)
        pointer = _points_elsewhere(primary)
        if primary.type in _WRAPPERS or primary.type.endswith(".ChildFailedError") or pointer:
            child = primary.type.endswith("ChildFailedError") or pointer
            cands = [
                e
                for e in real
                if e.type not in _WRAPPERS
                and not e.type.endswith(".ChildFailedError")
                and not _points_elsewhere(e)
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
    for cat, sub, pos, line in ex.signals:
        ranked.append(((cat, sub, pos), line))
    if not ranked:
        ranked = _tail_lines(ex)
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
        t = ex.mask_cache.get(line)
        if t is None:
            t = ex.mask_cache[line] = mask(line)
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
    else:
        # A warning names the paste's error type only when it is the paste's error: a log whose first
        # line is a Slurm OOM kill or an unsupported GPU has no type, whatever warnings it also printed.
        lead = next((w for w in reversed(ex.warn_excs) if lines and lines[0].startswith(w[1] + ":")), None)
        if lead is not None:
            exception, message = lead[1], _WS.sub(" ", lead[2]).strip() or None

    # Components: frames of the primary chain weigh most, generic torch internals least.
    if primary is not None:
        ex_comp = _exc_module_component(primary.type)
        if ex_comp:
            ex._comp(ex_comp, 1.5 if "." in ex_comp else 0.3, primary.pos)
    for e in excs:
        w = 2.0 if (primary is not None and e.chain == primary.chain and e.stream == primary.stream) else 1.0
        ex._tb_comps(e.frames, w, e.pos)
        if e is not primary:
            ex._comp(_exc_module_component(e.type), 0.5, e.pos)
    for p, frames in ex.orphan_frames:
        ex._tb_comps(frames, 1.0, max(p, 0))
    comps = sorted(ex.comp_scores, key=lambda c: (-ex.comp_scores[c], -ex.comp_last[c]))

    # Prose: user's words around the paste (or clearly human lines inside it).
    prose_parts: list[str] = []
    seen_p: set[str] = set()
    for pos, text, strong in ex.prose:
        if not text:
            continue
        inside = ex.first_log >= 0 and ex.first_log < pos < ex.last_log
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


def _points_elsewhere(e: _Exc) -> bool:
    """"Engine core initialization failed. See root cause above.": a wrapper by its message."""
    return bool(e.message) and _POINTS_ELSEWHERE.search(e.message) is not None


def _tail_lines(ex: _Extractor) -> list[tuple[tuple[int, int, int], str]]:
    """No error at all: a paste cut off inside a traceback (its deepest frames say what failed),
    or a hang (the last log lines say where it stopped)."""
    if any(st.in_tb for st in ex.streams.values()):
        return _cut_frames(ex)  # the last lines are frames and source: a hang's last log line is not among them
    prose_pos = {p: cjk for p, _, cjk in ex.prose}
    out: list[tuple[tuple[int, int, int], str]] = []
    lines = ex.lines
    last = islice((p for p in range(len(lines) - 1, -1, -1) if lines[p]), 8)
    for pos in last:
        raw = lines[pos]
        if pos in prose_pos:
            # The line a tool printed, then the user's question in Chinese on the same line
            # ("Setting `pad_token_id` to `eos_token_id`:2 for open-end generation. 如何修改参数？").
            lead = _LEADING_ASCII.match(raw) if prose_pos[pos] else None
            if lead is None or _Extractor.users_sentence(lead.group(0).strip()):
                continue
            raw = lead.group(0)
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


_LEADING_ASCII = re.compile(rf"[ \t]*[\x21-\x7e][\x20-\x7e]{{11,}}(?=[{EAST_ASIAN}])")
"""A line's English start, up to where Chinese begins."""

_CUT_FRAMES = 3


def _cut_frames(ex: _Extractor) -> list[tuple[tuple[int, int, int], str]]:
    """A paste that ends inside a traceback (people copy the top half of a long log): the deepest
    frames, each as `package/module.py in function: the call it was making`.

    Why: a raw frame line is mostly its install path (`/opt/venv/lib/python3.10/site-packages/...`),
    words every article quoting any traceback shares; the package-relative module, the function
    and the call made there (`raise ValueError(`, `assert param.ds_status == ...`) name the failure.
    """
    lines = ex.lines
    out: list[tuple[tuple[int, int, int], str]] = []
    src: dict[str, str] = {}  # stream -> the source line seen below (after) the frame being read
    for pos in range(len(lines) - 1, max(-1, len(lines) - 400), -1):
        raw = lines[pos]
        if not raw.strip():
            continue
        key, _, _, rest = _strip_prefixes(raw[:MAX_LINE])
        body = rest.strip()
        if body.startswith("Traceback (most recent call last)"):
            break
        m = _FRAME.match(body)
        if m is None:
            if body and not _CARET.match(body):
                src[key] = body
            continue
        path = m.group("path")
        part = _pkg_part(path)
        where = part or path.replace("\\", "/").rsplit("/", 1)[-1]
        func = body.rsplit(", in ", 1)[1].strip() if ", in " in body else ""
        call = src.pop(key, None)
        if func in _GENERIC_CALLS and part:
            continue  # a library's `module.py in _call_impl: return forward_call(*args)` is in every traceback
        line = f"{where} in {func}" if func else where
        if call:
            line += ": " + call
        out.append(((6, 0, -pos), line[:MAX_OUT_LINE]))
        if len(out) >= _CUT_FRAMES:
            break
    return out


def _exc_module_component(etype: str) -> str | None:
    """'torch.distributed.elastic.multiprocessing.errors.ChildFailedError' -> 'torch.distributed.elastic'."""
    if "." not in etype:
        return None
    mods = etype.split(".")[:-1]
    if mods[0] not in _LIBS:
        return None
    return ".".join(mods[:3])
