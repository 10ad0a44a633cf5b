"""Input text made safe at the edge: what reaches the core is always valid Unicode.

Pastes come from terminals and log files: invalid UTF-8 bytes, and JSON escapes for lone
surrogates (`"\\ud800"`) that Python happily turns into a `str` no encoder, tokenizer or
database accepts. Every front door decodes with `decode()`, and the core passes text
through `clean()` once more, so one bad character costs a replacement mark, not a 500.
"""

from __future__ import annotations

import re

_SURROGATES = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def clean(text: str) -> str:
    """Lone surrogates (from JSON escapes or surrogateescape decoding) -> U+FFFD."""
    return _SURROGATES.sub(REPLACEMENT, text) if _SURROGATES.search(text) else text


def decode(raw: bytes) -> str:
    """Bytes of unknown quality -> valid text: UTF-8 where it is, U+FFFD where it is not."""
    return raw.decode("utf-8", errors="replace")


def tail(text: str, max_bytes: int) -> tuple[str, bool]:
    """The end of a paste that fits in `max_bytes` of UTF-8, starting at a line, and whether it was cut.

    A pasted log is often longer than a query may be, and its final error is at the end."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text, False
    end = raw[-max_bytes:]
    newline = end.find(b"\n")
    if 0 <= newline < len(end) - 1:
        end = end[newline + 1 :]
    return end.decode("utf-8", errors="ignore"), True
