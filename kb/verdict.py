"""One verdict, one place: how far to trust the top result, and why, in a line a person can read.

Every front door (CLI, HTTP API, web page, bots) renders what `decide()` returns and keeps
no thresholds of its own:
- `answer`: the top article explains this error (the `confident` flag of the contract);
- `maybe`: the top article is related and worth a look, but may not be the cause;
- `none`: no article covers this error; the results are the closest, not a match.

The probability comes from a logistic model over named evidence about the top result
(`Evidence`), fitted by `scripts/fit_confidence.py` with cross-validation grouped by
article (kb/calibrate.py); its coefficients and thresholds are data, in
`kb/data/confidence.json`, beside the out-of-fold figures that justify them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

CONFIDENCE_FILE = Path(__file__).parent / "data" / "confidence.json"

MODEL_FEATURES = (
    "lexical", "template", "template_share", "coverage", "unknown", "margin", "exc_match", "exc_unknown",
    "rare_share", "platform_conflict", "facts_contradicted", "facts_supported", "template_words", "calls",
    "prose", "cross", "component", "expansion", "agreement", "lexical_abs", "expansion_cover", "rare_lead", "coverage_lead", "template_lead",
    "title_recall",
)
"""The evidence the confidence model reads, in the order of its coefficients."""

SIGNS = {
    "template": 1, "template_share": -1, "coverage": 1, "unknown": -1, "margin": 1, "exc_match": 1,
    "exc_unknown": -1, "rare_share": 1, "platform_conflict": -1, "facts_contradicted": -1, "facts_supported": 1,
    "template_words": 1, "calls": 1, "agreement": 1, "expansion": 1, "lexical_abs": 1, "expansion_cover": 1,
    "rare_lead": 1, "coverage_lead": 1, "template_lead": 1, "title_recall": 1,
}
"""The direction each piece of evidence may push, known before any fitting: more of the query's rare
words in the article can only help, a line many articles quote can only hurt. The fit keeps these
signs (a feature whose best weight has the wrong sign gets none), so the model cannot learn a quirk
of the eval set that would not hold on pastes it never saw. Unlisted features may go either way."""


@dataclass(frozen=True)
class Evidence:
    """What ties one result to the query: ranking scores and trust features, each 0..1 unless said."""

    lexical: float
    expansion: float
    dense: float | None
    """None when the dense model was not consulted (lexical evidence already decided the top result)."""
    template: float
    template_share: float
    """ln(how many articles carry the matched error template) times the match strength: a line
    every OOM article quotes says less about which article is right than a rare one."""
    component: float
    coverage: float
    unknown: float
    """Share of the query's IDF mass in words the corpus never uses (e.g. `horovod`, `jax`): high means not covered."""
    margin: float = 0.0
    """How far this result leads the next one (top result only)."""
    exc_match: float = 0.0
    """1 the query's exception class is one the article raises, 0.5 the article mentions it, -1 it does
    not (the article is about another exception), 0 the query names no exception."""
    exc_unknown: float = 0.0
    """1 when the query's exception class appears in no article at all and no error line of the query matched."""
    rare_share: float = 0.0
    """Share of the query's rarest words (by IDF) that the article contains."""
    platform_conflict: float = 0.0
    """1 when the query names a platform or framework (xla, mps, rocm, tensorflow, …) the article never does."""
    facts: float = 0.0
    """+1 the paste's numbers satisfy the article's `applies_when`, -1 they contradict it, 0 no say."""
    subject_conflict: float = 0.0
    """1 when the paste's error line names one package or module (`Could not build wheels for X`,
    `No module named 'X'`) and the article's matched line another, which the article never mentions."""
    template_words: float = 0.0
    """Literal words left in the matched template after masking (/12): few means a generic shape."""
    calls: float = 0.0
    """BM25 of the traceback's deepest calls against the article."""
    prose: float = 0.0
    cross: float = 0.0
    agreement: float = 0.0
    """Share of the independent signals (words, glossary, error template, calls, meaning) that rank this
    article first: a right answer tends to win on several, a look-alike on one."""
    lexical_abs: float = 0.0
    """BM25 of the article's best chunk over the query's IDF mass: how much of the query one passage answers."""
    expansion_cover: float = 0.0
    """Share (by IDF) of the glossary's translations of the query that the article contains: for a question in
    the other language, how much of what it asks about the article talks about."""
    rare_lead: float = 0.0
    coverage_lead: float = 0.0
    template_lead: float = 0.0
    """Top result only: its rare_share, coverage and template_words minus the runner-up's."""
    points_elsewhere: float = 0.0
    """1 when the paste's only error lines point at an error it does not contain (`See root cause above`)."""
    title_recall: float = 0.0
    """Share of the article title's IDF mass that the query holds. The other features ask how much of the
    query the article explains; this asks the reverse. A title states the article's error and cause, so a
    paste of that error holds most of it, while a look-alike (same exception, another cause) holds a part."""

    def model_row(self) -> list[float]:
        v = self.__dict__
        return [
            *(v[n] for n in ("lexical", "template", "template_share", "coverage", "unknown", "margin", "exc_match",
                             "exc_unknown", "rare_share", "platform_conflict")),
            1.0 if self.facts < 0 else 0.0, 1.0 if self.facts > 0 else 0.0,
            *(v[n] for n in ("template_words", "calls", "prose", "cross", "component", "expansion", "agreement", "lexical_abs", "expansion_cover",
                             "rare_lead", "coverage_lead", "template_lead", "title_recall")),
        ]

    def as_dict(self) -> dict:
        return {k: None if v is None else round(v, 4) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class ConfidenceModel:
    bias: float
    coef: tuple[float, ...]
    answer_at: float
    """Probability at or above which the verdict is `answer`."""
    maybe_at: float
    """Probability at or above which a non-answer is `maybe` rather than `none`."""
    reference: tuple[float, ...]
    """Mean feature row of right answers: a reason names the feature furthest below it."""

    @classmethod
    def load(cls, path: Path = CONFIDENCE_FILE) -> "ConfidenceModel":
        d = json.loads(path.read_text(encoding="utf-8"))
        if tuple(d["features"]) != MODEL_FEATURES:
            raise ValueError(f"{path}: fitted on features {d['features']}, the code has {list(MODEL_FEATURES)}: "
                             "run scripts/fit_confidence.py")
        return cls(d["bias"], tuple(d["coef"]), d["answer_at"], d["maybe_at"], tuple(d["reference"]))

    @classmethod
    def undecided(cls) -> "ConfidenceModel":
        """p = 0.5 for everything and never an answer: what searches run on while a new model is fitted."""
        return cls(0.0, (0.0,) * len(MODEL_FEATURES), 1.01, 0.0, (0.0,) * len(MODEL_FEATURES))

    def probability(self, ev: Evidence) -> float:
        z = self.bias + sum(c * x for c, x in zip(self.coef, ev.model_row()))
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


@dataclass(frozen=True)
class Verdict:
    kind: str
    """"answer" | "maybe" | "none"."""
    reason: str

    @property
    def confident(self) -> bool:
        return self.kind == "answer"


@dataclass(frozen=True)
class Context:
    """What a reason may quote: the query's exception and platforms, the article's, the matched line."""

    exception: str | None = None
    exception_known: bool = True
    """Whether any article names the query's exception class."""
    query_platforms: tuple[str, ...] = ()
    article_platforms: tuple[str, ...] = ()
    article_exceptions: tuple[str, ...] = ()
    matched_error: str | None = None
    condition: str | None = None
    rare_missing: tuple[str, ...] = ()
    unknown_words: tuple[str, ...] = ()
    sharing: int = 1
    query_subject: str | None = None
    article_subject: str | None = None
    ruled_out: tuple[str, str] | None = None
    """(id, condition) of an article that quotes the paste's error line but whose condition the paste contradicts."""
    title_missing: tuple[str, ...] = ()
    """The article title's most distinctive words that the paste lacks."""


QUOTED_LINE = 0.9
"""Error-template match at or above which the top article quotes the paste's own error line."""


def verdict_kind(confidence: float, answer_at: float, maybe_at: float, top: Evidence) -> str:
    """answer / maybe / none for a top result (kb/calibrate.py measures exactly this).

    The probability decides, within two rules: a vetoed article is never the answer (and with no
    word in common not even related); an article that quotes the paste's error line is never
    `none`, because "no article for this error" would be false: it is `maybe`, the cause to check."""
    return _kind(confidence, answer_at, maybe_at, top, vetoed(top))


def _kind(confidence: float, answer_at: float, maybe_at: float, top: Evidence, veto: str | None) -> str:
    kind = "answer" if confidence >= answer_at else "maybe" if confidence >= maybe_at else "none"
    if veto == "no_words":
        return "none"
    if veto:
        return "none" if kind == "none" else "maybe"
    return "maybe" if kind == "none" and top.template >= QUOTED_LINE else kind


def decide(model: ConfidenceModel, top: Evidence | None, confidence: float, ctx: Context) -> Verdict:
    """The verdict for a response whose top result has this evidence and confidence."""
    if top is None:
        return Verdict("none", "no article in the knowledge base matched any word of this error")
    veto = vetoed(top)
    kind = _kind(confidence, model.answer_at, model.maybe_at, top, veto)
    if veto is None:
        return Verdict(kind, _support(top, ctx) if kind == "answer" else _doubt(model, top, ctx))
    if veto != "no_words" and ctx.exception and not ctx.exception_known:
        veto = "exc_unknown"  # the most telling thing to say, whichever evidence vetoed
    return Verdict(kind, _DOUBTS[veto](top, ctx) or "the closest article does not fit this paste")


UNKNOWN_VETO = 0.6


def vetoed(ev: Evidence) -> str | None:
    """The evidence that rules an answer out whatever the scores say, or None.

    - no word of the paste is in the article (only the embedding finds it close);
    - the article matches none of the paste's error lines, and either the paste's error type is
      in no article or most of its distinctive words are in no article (a question about
      something else that shares a word or two: on a small corpus even a single `不`);
    - the paste is about another platform;
    - its numbers contradict the article's condition;
    - its error line is about another package than the article's (the same build failure of another wheel);
    - its only error line points at an error it does not contain (`See root cause above`): any article
      quoting that wrapper is a guess at the cause.
    None of the eval's right answers carries any of them. They matter most where the eval has
    no examples. The error-line condition keeps a small knowledge base useful: a long NCCL log
    full of words its five articles never use, whose watchdog line one article quotes, is
    still answered by that article.
    """
    if ev.lexical <= 0 and ev.expansion <= 0:
        return "no_words"
    if ev.exc_unknown:  # set only when no error line matched (kb/search.py)
        return "exc_unknown"
    if ev.template < 0.5 and ev.unknown >= UNKNOWN_VETO:
        return "mostly_unknown"
    if ev.platform_conflict:
        return "platform_conflict"
    if ev.facts < 0:
        return "facts_contradicted"
    if ev.subject_conflict:
        return "subject_conflict"
    if ev.points_elsewhere:
        return "points_elsewhere"
    return None


def _support(ev: Evidence, ctx: Context) -> str:
    if ev.template >= 0.5 and ctx.matched_error:
        return f"the error line matches the article's `{_cut(ctx.matched_error)}`"
    if ev.exc_match >= 1 and ctx.exception:
        return f"the article explains `{ctx.exception}` with the same details as this paste"
    if ev.facts > 0 and ctx.condition:
        return f"the numbers in the paste fit the article's condition `{ctx.condition}`"
    return "the article shares the paste's distinctive words and no other article comes close"


def _doubt(model: ConfidenceModel, ev: Evidence, ctx: Context) -> str:
    """The reason is the feature that pulls the probability furthest below a typical right answer's."""
    row = ev.model_row()
    pulls = sorted((c * (x - r), name) for c, x, r, name in zip(model.coef, row, model.reference, MODEL_FEATURES))
    for pull, name in pulls:
        if pull >= 0:
            break
        sentence = _DOUBTS.get(name, lambda e, c: None)(ev, ctx)
        if sentence:
            return sentence
    return "no article matches this error closely enough to be sure"


def _cut(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _words(items: tuple[str, ...]) -> str:
    return ", ".join(f"`{w}`" for w in items[:3])


_DOUBTS = {
    "mostly_unknown": lambda e, c: (
        f"most distinctive words of the paste, such as {_words(c.unknown_words)}, appear in no article"
        if c.unknown_words else "most distinctive words of the paste appear in no article"),
    "no_words": lambda e, c: "no word of the paste appears in the closest article; it is only loosely similar",
    "exc_unknown": lambda e, c: c.exception and not c.exception_known
    and f"the error type `{c.exception}` does not appear in any article",
    "exc_match": lambda e, c: e.exc_match < 0 and c.exception
    and (f"the closest article is about {_words(c.article_exceptions)}, not `{c.exception}`" if c.article_exceptions
         else f"the closest article never mentions `{c.exception}`"),
    "platform_conflict": lambda e, c: e.platform_conflict and c.query_platforms
    and (f"the paste is about {_words(c.query_platforms)}; the closest article is about {_words(c.article_platforms)}"
         if c.article_platforms else f"the paste is about {_words(c.query_platforms)}, which no close article covers"),
    "subject_conflict": lambda e, c: e.subject_conflict and c.query_subject
    and f"the paste's error is about `{c.query_subject}`; the closest article's is about `{c.article_subject}`",
    "points_elsewhere": lambda e, c: (
        "the paste's error line only points at the real error (\"see root cause above\"): paste the lines above it"),
    "facts_contradicted": lambda e, c: e.facts < 0 and c.condition
    and f"the numbers in the paste contradict the closest article, which applies when `{c.condition}`",
    "unknown": lambda e, c: e.unknown > 0.2 and c.unknown_words
    and f"words of the paste such as {_words(c.unknown_words)} appear in no article",
    "title_recall": lambda e, c: c.title_missing
    and f"the closest article is about {_words(c.title_missing)}, which the paste does not mention",
    "rare_share": lambda e, c: c.rare_missing
    and f"the closest article lacks the paste's distinctive words {_words(c.rare_missing)}",
    "coverage": lambda e, c: c.rare_missing
    and f"the closest article lacks the paste's distinctive words {_words(c.rare_missing)}",
    "template_share": lambda e, c: c.sharing > 1 and c.matched_error
    and f"the matched line `{_cut(c.matched_error, 80)}` is quoted by {c.sharing} articles with different causes",
    "template_words": lambda e, c: e.template > 0 and c.matched_error
    and f"the matched line `{_cut(c.matched_error, 80)}` is a generic shape that many errors share",
    "margin": lambda e, c: "several articles match about equally well",
    "template": lambda e, c: (
        f"the article that quotes this error line, `{c.ruled_out[0]}`, applies when `{c.ruled_out[1]}`, "
        "which the paste's numbers contradict" if c.ruled_out else "no article quotes this error line"),
    "lexical": lambda e, c: "the closest article shares only a few words with the paste",
}
