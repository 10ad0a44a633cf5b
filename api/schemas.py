"""Request and response bodies of the HTTP API (the contract in DESIGN.md, extended not broken)."""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from kb.results import Result


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # `{"k": 1}` is a mistake to report, not to ignore

    query: str = Field(description="An error line, a pasted traceback or log (up to 64 KB), or a question.")
    top_k: int = Field(5, ge=1, le=50, description="How many articles to return (1-50).")


class Evidence(BaseModel):
    lexical: float
    expansion: float
    dense: float | None = Field(None, description="Dense similarity; null when the model was not consulted because the lexical evidence already decided the top result.")
    template: float
    template_share: float = Field(0.0, description="ln(articles sharing the matched error template) x match strength: high means a common line.")
    component: float
    coverage: float
    unknown: float


RESULT_DOCS = {
    "confidence": "Probability-like 0..1 that this article explains the error.",
    "matched_error": "The article's error line that matched the paste.",
    "snippet": "The passage of the article that matched best.",
}


def _result_model() -> type[BaseModel]:
    """`SearchResultPublic` built from the core's `kb.results.Result`: one shape, documented here."""
    hints = typing.get_type_hints(Result)
    fields = {f.name: (hints[f.name], Field(description=RESULT_DOCS.get(f.name)))
              for f in dataclasses.fields(Result) if f.name != "evidence"}
    return create_model("SearchResultPublic", **fields, evidence=(Evidence, ...))


SearchResultPublic = _result_model()


class SignaturePublic(BaseModel):
    exception: str | None = None
    lines: list[str] = []
    templates: list[str] = []
    components: list[str] = []


class SearchResponsePublic(BaseModel):
    results: list[SearchResultPublic]
    confident: bool = Field(description="True exactly when `verdict` is \"answer\".")
    verdict: Literal["answer", "maybe", "none"] = Field(description="answer: the top result explains the error; maybe: related, worth a look; none: no article covers this error (the results are the closest, not a match).")
    reason: str = Field(description="One line saying why, e.g. \"the error type `XlaRuntimeError` does not appear in any article\".")
    expanded_terms: list[str] = Field([], description="Glossary terms that fired and were expanded into the other language.")
    signature: SignaturePublic
    took_ms: float
    search_id: str = Field("", description="Refer to this search in `POST /v1/feedback`; empty when recording is off (KB_RECORD_SEARCHES=0).")


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"search_id": "3f9a1c7be2d40a11", "article_id": "oom-fragmentation-expandable-segments", "helpful": False,
         "comment": "allocated and reserved were equal, so not fragmentation"}]})

    search_id: str = Field(max_length=64, description="`search_id` of the search response.")
    article_id: str = Field(max_length=128, description="The result this vote is about.")
    helpful: bool
    comment: str | None = Field(None, max_length=2000, description="Optional; kept masked like a paste (no paths, hosts or tokens).")


class Gap(BaseModel):
    gap_id: str
    count: int = Field(description="Searches with this error line that got no answer or a 👎.")
    users: int = Field(description="Distinct askers among them.")
    example: str = Field(description="The masked error line (never the raw paste).")
    exception: str | None
    closest: list[str] = Field(description="Articles those searches came closest to.")
    doors: list[str] = Field(description="Front doors they came through (api, web, cli, slack, …).")
    helpful: int
    unhelpful: int
    first_seen: float
    last_seen: float
    verdicts: dict[str, int]
    linked_to: str | None = None


class GapsPublic(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"gaps": [{
        "gap_id": "5c1e0b7d9a2f", "count": 7, "users": 4,
        "example": "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate <SIZE>.",
        "exception": "XlaRuntimeError", "closest": ["oom-forward-long-sequence-attention"], "doors": ["slack", "web"],
        "helpful": 0, "unhelpful": 2, "first_seen": 1795500000.0, "last_seen": 1795577991.0,
        "verdicts": {"none": 5, "maybe": 2}, "linked_to": None}]}]})

    gaps: list[Gap]


class GapLinkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"article_id": "oom-forward-long-sequence-attention"}]})

    article_id: str = Field(max_length=128)


class GapLinked(BaseModel):
    gap_id: str
    article_id: str
    file: str = Field(description="The article file whose `error_lines` front matter gained the gap's line.")


class ArticlePublic(BaseModel):
    article_id: str
    title: str
    lang: str
    tags: list[str]
    source: str | None
    meta: dict
    root_cause: str
    fix: str
    error_lines: list[str]
    body: str


class ArticleCreate(BaseModel):
    """Either `markdown` (a whole article with front matter) or the fields to build one."""

    markdown: str | None = None
    id: str | None = None
    title: str | None = None
    lang: str | None = None
    tags: list[str] = []
    source: str | None = None
    body: str | None = None


class ArticleWritten(BaseModel):
    article_id: str
    created: bool


class Health(BaseModel):
    status: str
    articles: int
    chunks: int
    model_id: str
    format_version: int
    snapshot: str
    built_at: float
    segments: int = 1
    """Index segments the snapshot reads: 1 after a full ingest, one more per small write until `kb compact`."""
    backend: str = "local"
    """Where the vectors live: `local` files or `qdrant` (KB_INDEX_BACKEND)."""


class ErrorBody(BaseModel):
    detail: str
