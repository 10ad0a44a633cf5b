"""Evaluation on a JSON-lines query set: recall@1, recall@5, MRR, confidence, latency.

A query's `confident` flag is right when it is true exactly when the top result is
relevant; for a query the corpus does not cover (`relevant: []`) it must be false.
Confidence figures are out of fold, grouped by article (kb/calibrate.py): every covered
query is searched again with its article left out, and the model that judges a query was
fitted without any query about the same article.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from . import calibrate
from .errors import KbError
from .results import SearchResponse

SearchFn = Callable[..., SearchResponse]
"""search(query, top_k, exclude=frozenset()) -> SearchResponse."""


@dataclass(frozen=True)
class EvalQuery:
    qid: str
    query: str
    relevant: tuple[str, ...]
    kind: str


@dataclass
class QueryOutcome:
    query: EvalQuery
    ranked: list[str]
    confident: bool
    ms: float
    oof_confident: bool | None = None
    """The verdict a confidence model fitted without this query's article gives (None: not measured)."""

    @property
    def rank(self) -> int | None:
        for i, a in enumerate(self.ranked):
            if a in self.query.relevant:
                return i + 1
        return None

    @property
    def confident_right(self) -> bool:
        confident = self.confident if self.oof_confident is None else self.oof_confident
        return confident == (self.rank == 1)


@dataclass
class KindFigures:
    kind: str
    n: int
    recall_at_1: float | None
    recall_at_5: float | None
    mrr: float | None
    confident_accuracy: float
    p50_ms: float
    p95_ms: float

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass
class EvalReport:
    per_kind: list[KindFigures]
    overall: KindFigures
    outcomes: list[QueryOutcome] = field(repr=False, default_factory=list)
    confidence: dict = field(default_factory=dict)
    """Out-of-fold trust figures (kb/calibrate.py figures())."""
    rows: list = field(repr=False, default_factory=list)

    def as_dict(self) -> dict:
        return {"overall": self.overall.as_dict(), "per_kind": [k.as_dict() for k in self.per_kind],
                "confidence_out_of_fold": self.confidence}


def load_queries(path: Path) -> list[EvalQuery]:
    queries: list[EvalQuery] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                queries.append(EvalQuery(str(d["qid"]), str(d["query"]), tuple(d.get("relevant") or ()), str(d.get("kind", "other"))))
            except (ValueError, KeyError, TypeError) as exc:
                raise KbError(f"{path}: line {n}: not an eval query ({exc}); expected {{\"qid\", \"query\", \"relevant\", \"kind\"}}") from None
    return queries


def run(queries: Iterable[EvalQuery], search: SearchFn, k: int = 5, confidence: bool = True) -> EvalReport:
    """Search every query; with `confidence`, also leave each covered query's article out and
    judge every verdict by a model fitted out of fold."""
    outcomes: list[QueryOutcome] = []
    rows: list[calibrate.Row] = []
    for q in queries:
        started = time.perf_counter()
        response = search(q.query, k)
        ms = (time.perf_counter() - started) * 1000
        outcomes.append(QueryOutcome(q, [r.article_id for r in response.results], response.confident, ms))
        if confidence:
            rows.append(calibrate.row(q, q.kind, response))
            if q.relevant:
                rows.append(calibrate.row(q, "lao", search(q.query, 1, exclude=frozenset(q.relevant))))
    trust: dict = {}
    if confidence and rows:
        verdicts, trust = calibrate.measure(rows)
        judged = iter(v for r, v in zip(rows, verdicts) if r.kind != "lao")
        for o in outcomes:
            o.oof_confident = next(judged) == "answer"
    by_kind: dict[str, list[QueryOutcome]] = defaultdict(list)
    for o in outcomes:
        by_kind[o.query.kind].append(o)
    per_kind = [figures(kind, group) for kind, group in sorted(by_kind.items())]
    return EvalReport(per_kind, figures("all", outcomes), outcomes, trust, rows)


def figures(kind: str, rows: list[QueryOutcome]) -> KindFigures:
    answerable = [o for o in rows if o.query.relevant]
    ranks = [o.rank for o in answerable]

    def share(pred) -> float | None:
        return sum(1 for r in ranks if pred(r)) / len(ranks) if ranks else None

    times = sorted(o.ms for o in rows) or [0.0]
    return KindFigures(
        kind=kind,
        n=len(rows),
        recall_at_1=share(lambda r: r == 1),
        recall_at_5=share(lambda r: r is not None and r <= 5),
        mrr=(sum(1 / r for r in ranks if r) / len(ranks)) if ranks else None,
        confident_accuracy=sum(o.confident_right for o in rows) / len(rows) if rows else 0.0,
        p50_ms=statistics.median(times),
        p95_ms=times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))],
    )
