"""Text at the edge: valid Unicode in, and the one home of language detection and CJK ranges.

Pastes come from terminals and log files: invalid UTF-8 bytes, and JSON escapes for lone
surrogates (`"\\ud800"`) that Python happily turns into a `str` no encoder, tokenizer or
database accepts. Every front door decodes with `decode()`, and the core passes text
through `clean()` once more, so one bad character costs a replacement mark, not a 500.

Chinese is recognised by one range (`HAN`) everywhere: the tokenizer's jieba runs, the
glossary, scraped-page cleaning, language detection and the bots' reply language.
"""

from __future__ import annotations

import re

_SURROGATES = re.compile("[\ud800-\udfff]")
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
"""Han ideographs: CJK unified, extension A, the compatibility block and the supplementary planes."""
EAST_ASIAN = "\u3040-\u30ff" + HAN + "\uac00-\ud7af"
"""Chinese plus Japanese kana and Korean hangul: text that is not a log line's ASCII."""
HAN_CHAR = re.compile(f"[{HAN}]")
HAN_RUN = re.compile(f"[{HAN}]+")
_FENCED = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_LATIN = re.compile(r"[A-Za-z]")
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


def has_chinese(text: str) -> bool:
    return HAN_CHAR.search(text or "") is not None


def detect_lang(text: str) -> str:
    """`zh` when Chinese characters make up a real share of the prose (code blocks aside), else `en`.

    A Chinese question around a long English error is `zh`: three Chinese characters count
    for as much as six Latin letters' worth of an error string."""
    text = _FENCED.sub(" ", text)
    cjk = len(HAN_CHAR.findall(text))
    latin = len(_LATIN.findall(text))
    return "zh" if cjk and cjk * 3 >= latin * 0.5 else "en"
