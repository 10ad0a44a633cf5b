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
