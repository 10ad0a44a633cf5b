"""The `Signature` an extraction returns, and the limits that shape it."""

from __future__ import annotations

from dataclasses import dataclass

from .vocab import _POINTS_ELSEWHERE


MAX_LINE = 2000  # chars of one line that are analysed (and masked)
MAX_TEXT = 512 * 1024  # chars of one paste that are analysed (head + tail)
MAX_SIGNAL_LINES = 30
MAX_WARNING_LINES = 8
MAX_COMPONENTS = 8
MAX_OUT_LINE = 800  # a signal line is cut to this length
TEXT_BUDGET = 2000
MAX_PROSE = 800
_CONT_WINDOW = 16  # an exception message continues within this many lines
_FAIL_WINDOW = 120  # a torchrun failure summary (with an embedded traceback) fits in this many lines


@dataclass(frozen=True)
class Signature:
    """What a paste says about its failure, ready for retrieval."""

    exception: str | None
    message: str | None
    lines: tuple[str, ...]
    templates: tuple[str, ...]
    components: tuple[str, ...]
    prose: str

    def text(self) -> str:
        """Reduced query text: the user's words, signal lines, components (<= ~2000 chars)."""
        parts: list[str] = []
        used = 0
        if self.prose:
            p = self.prose[:600]
            parts.append(p)
            used += len(p) + 1
        for line in self.lines:
            piece = line[:400]
            if used + len(piece) + 1 > TEXT_BUDGET - 120:
                break
            parts.append(piece)
            used += len(piece) + 1
        if self.components:
            parts.append(" ".join(self.components))
        return "\n".join(parts)[:TEXT_BUDGET]

    def points_elsewhere(self) -> bool:
        """True when every error line only points at the real error (vLLM's `Engine core initialization failed.
        See root cause above.`): the cause is in lines the user did not paste."""
        return bool(self.lines) and all(_POINTS_ELSEWHERE.search(line) for line in self.lines)
