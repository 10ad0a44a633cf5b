"""What a search returns: ranked results with their evidence, and the one verdict.

The HTTP API's result model (api/schemas.py) is built from `Result`; a test keeps the response in step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .verdict import Evidence

SNIPPET_CHARS = 500


@dataclass
class Result:
    article_id: str
    title: str
    lang: str
    score: float
    confidence: float
    root_cause: str
    fix: str
    snippet: str
    source: str | None
    tags: list[str]
    matched_error: str | None
    evidence: Evidence

    def as_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "evidence"}
        d["score"] = round(self.score, 4)
        d["confidence"] = round(self.confidence, 4)
        d["evidence"] = self.evidence.as_dict()
        return d


@dataclass
class SearchResponse:
    results: list[Result]
    confident: bool
    verdict: str = "none"
    """"answer" (the top result explains the error), "maybe" (related, check it) or "none" (no article covers it)."""
    reason: str = ""
    """One line a person can read: why the verdict is what it is."""
    expanded_terms: list[str] = field(default_factory=list)
    signature: dict = field(default_factory=dict)
    took_ms: float = 0.0
    search_id: str = ""
    """Set when the search was recorded (kb/loop.py): what feedback refers to."""

    def as_dict(self) -> dict:
        return {
            "results": [r.as_dict() for r in self.results],
            "confident": self.confident,
            "verdict": self.verdict,
            "reason": self.reason,
            "expanded_terms": self.expanded_terms,
            "signature": self.signature,
            "took_ms": round(self.took_ms, 2),
            "search_id": self.search_id,
        }


def snippet(text: str) -> str:
    """The best-matching chunk, cut at a word boundary."""
    text = text.strip()
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"
