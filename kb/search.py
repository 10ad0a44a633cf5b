"""Read path: open a snapshot and answer a pasted error with ranked articles.

Evidence per article, combined with weights chosen on the eval set:
- lexical: BM25 over code-aware + jieba tokens of the error signature (and the question),
  plus a down-weighted BM25 over glossary expansions into the other language;
- dense: cosine similarity of the signature text to the article's best chunk, computed only
  when it could change the top result (see `Searcher.needs_dense`): the encoder is most of
  a query's cost, and exact error evidence usually decides on its own;
- template: the query's masked error lines against the article's masked error lines;
- component: the libraries named by the traceback's frames against the article's.
`confident` comes from a small logistic model over the top result's evidence.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterable

import faiss
import numpy as np

from .config import MAX_QUERY_BYTES, RankingWeights
from .embed import Encoder, compute_threads
from .errors import NotFoundError, QueryError, QueryTooLargeError
from .glossary import Glossary
from .signature import Signature, as_printed, extract, focus, frame_calls, without_absent_fields
from .facts import check, extract_facts
from .segment import ArticleMeta, Segment, SegmentCache, template_words
from .store import Manifest, SnapshotFiles
from .text import HAN_CHAR, clean, detect_lang
from .results import Result, SearchResponse, snippet
from .tokenize import Tokenizer
from .trust import (
    AGREEING_SIGNALS, RARE_WORDS, is_prose, lead, mentions, platform_clash, short_exception, subject,
)
from .vectors import LocalBackend
from .verdict import QUOTED_LINE, ConfidenceModel, Context, Evidence, decide

DENSE_CANDIDATES = 100
POOL_PER_SIGNAL = 30
TEMPLATE_DECAY = 0.5
GENERIC_LINE_WEIGHT = 0.5
"""An article's generic line (kb.signature.GENERIC_LINE: a hint, a launcher summary) counts this much of a
real error line in a template match, so `matched_error` shows the real error line whenever one matches."""
DENSE_QUERY_CHARS = 600
"""The signature text puts the user's words and the exception first; past this the model adds latency, not signal."""


_IDENTIFIER = re.compile(r"[\d_./]|\w-\w")
"""A token that is code, a file, a version or a model name rather than an everyday word."""

_URL_HOST = re.compile(r"(?:[\w-]+\.)+(?:com|org|net|io|ai|dev|cn|co|me|app|gg)(?:/|$)")
"""A token that is a link's host and path (`colab.research.google.com/drive/1qOj…`), its scheme split off."""

FEATURES = ("lexical", "expansion", "bridge", "dense", "template", "component", "cross", "prose", "calls", "facts")
"""`cross`: the article is in the other language; `prose`: the query has no error string to match exactly;
`calls`: BM25 of the traceback's deepest calls; `facts`: +1 the paste's numbers satisfy the article's
`applies_when`, -1 they contradict it, 0 it cannot tell."""


@dataclass
class Candidates:
    """Evidence for one query: a feature row (FEATURES) per candidate article in `pool`."""

    sig: Signature
    q_tokens: list[str]
    exp_tokens: list[str]
    expanded_terms: list[str]
    pool: list[int]
    features: np.ndarray
    templates: dict[int, tuple[float, int]]
    chunk_scores: np.ndarray
    dense_used: bool
    q_mass: float
    """The summed IDF of the query's words (each once): what a passage holding all of them would score."""
    unknown: float
    """Share of that mass in words no article uses."""
    rare: list[str]
    """The query's rarest words that the corpus knows (`Searcher._rarest`)."""
    calls: tuple[str, ...] = ()
    facts: dict = field(default_factory=dict)
    scale: float = 1.0
    """The raw BM25 score that lexical features were divided by (the best article's)."""
    excluded: frozenset[int] = frozenset()
    printed: str = ""
    """The paste as printed (`as_printed`), held for this search only: a reason must not say the paste lacks a
    word that is in it, outside the lines the signature kept."""

    @cached_property
    def words(self) -> frozenset[str]:
        """The query's words and their glossary translations: what an article's title is looked for in."""
        return frozenset(self.q_tokens) | frozenset(self.exp_tokens)


def validate_query(query: str) -> str:
    """The query as the core may use it (lone surrogates replaced), or a QueryError saying what to send."""
    if not isinstance(query, str) or not query.strip():
        raise QueryError("the query is empty: paste an error message, a traceback or a question")
    if len(query.encode("utf-8", "replace")) > MAX_QUERY_BYTES:
        raise QueryTooLargeError(
            f"the query is {len(query.encode('utf-8', 'replace'))} bytes; the limit is {MAX_QUERY_BYTES}: "
            "paste the end of the traceback (the last exception and the lines above it)"
        )
    return clean(query)


class Searcher:
    """One open snapshot, ready to answer. Immutable after load, so safe across threads."""

    def __init__(self, snapshot: Path, encoder: Encoder, tokenizer: Tokenizer, glossary: Glossary,
                 weights: RankingWeights, model: ConfidenceModel | None = None,
                 extractor: Callable[[str], Signature] = extract, segments: SegmentCache | None = None,
                 backend=None):
        """`segments`: where open segments are shared between snapshots (one per KnowledgeBase);
        `backend`: where the vectors live (kb/vectors.py; default the local files)."""
        self.path = snapshot
        self.extractor = extractor
        self.manifest = Manifest.read(SnapshotFiles(snapshot).manifest)
        self.encoder, self.tokenizer, self.glossary, self.weights = encoder, tokenizer, glossary, weights
        self.model = model or ConfidenceModel.load()
        chain = self.manifest.chain(snapshot)
        self.segments = segments.get(chain) if segments is not None else [Segment(p) for p in chain]
        self._owns_segments = segments is None
        faiss.omp_set_num_threads(compute_threads())  # OpenMP spin-waits cost more than they give per query

        # The live articles of the chain, in id order; a tombstoned copy is left out.
        dead = [self.manifest.tombstoned(seg.path) for seg in self.segments]
        live = sorted(((a.id, si, li) for si, seg in enumerate(self.segments)
                       for li, a in enumerate(seg.articles) if a.id not in dead[si]))
        self.articles: list[ArticleMeta] = [self.segments[si].articles[li] for _, si, li in live]
        self.article_segment: list[Segment] = [self.segments[si] for _, si, _ in live]
        self.index_of = {aid: ai for ai, (aid, _, _) in enumerate(live)}
        # Rows (chunks) of every segment's indexes, numbered in chain order; tombstoned rows get -1.
        global_of = [np.full(len(seg.articles), -1, dtype=np.int64) for seg in self.segments]
        for ai, (_, si, li) in enumerate(live):
            global_of[si][li] = ai
        positions, chunk_article, row_chunk = [], [], []
        n_rows = 0
        for si, seg in enumerate(self.segments):
            owner = global_of[si][seg.row_article] if len(seg.row_article) else np.zeros(0, dtype=np.int64)
            alive = owner >= 0
            pos = np.full(len(owner), -1, dtype=np.int64)
            pos[alive] = np.arange(n_rows, n_rows + int(alive.sum()))
            n_rows += int(alive.sum())
            positions.append(pos)
            chunk_article.append(owner[alive])
            row_chunk.append(seg.chunk_ids[alive])
        self.chunk_article = np.concatenate(chunk_article).astype(np.int64)
        self.row_chunk = np.concatenate(row_chunk)
        self.n_rows = n_rows
        self.index = (backend or LocalBackend()).open(self.segments, positions, dead)
        """BM25 and dense scores of the chain's live rows (kb/vectors.py: local files or Qdrant)."""
        self.df = self.index.df

        self._global_of = global_of
        self._tokens_cache: dict[int, frozenset[str]] = {}
        self._title_tokens: dict[int, frozenset[str]] = {}
        self._own_tokens: dict[int, frozenset[str]] = {}
        self._idf_cache: dict[str, float] = {}
        self._line_mass_cache: dict[int, tuple[float, ...]] = {}

    def variant(self, weights: RankingWeights | None = None,
                extractor: Callable[[str], Signature] | None = None) -> "Searcher":
        """This searcher with other weights or another signature extractor, sharing the loaded
        index: how ablation and tuning switch parts off without touching the original."""
        other = copy.copy(self)
        other.weights = weights or self.weights
        other.extractor = extractor or self.extractor
        other._owns_segments = False  # the original closes the shared segments
        return other

    # -- evidence ---------------------------------------------------------

    def _per_article_max(self, chunk_scores: np.ndarray) -> np.ndarray:
        out = np.zeros(len(self.articles), dtype=np.float32)
        if len(chunk_scores):
            np.maximum.at(out, self.chunk_article, chunk_scores.astype(np.float32))
        return out

    def _idf(self, token: str) -> float:
        """The token's IDF in this snapshot, cached: the same words come back in every search and every
        candidate, and each uncached value sums the token's counts over the chain's segments."""
        cache = self._idf_cache
        value = cache.get(token)  # one lookup, so a clear by another thread in between is harmless
        if value is None:
            if len(cache) > 100_000:  # pastes bring words of their own: keep the cache bounded
                cache.clear()
            value = cache[token] = self.index.lexical_index.idf(token)
        return value

    def _templates(self, sig: Signature, candidates: set[int], excluded: frozenset[int] = frozenset()
                   ) -> dict[int, tuple[float, int]]:
        """article index -> (match strength 0..1, index of the article's matched error line).

        The signature lists its lines most telling first (the final exception, then context,
        then launcher summaries such as `failed (exitcode: 1) ... of binary`), so a match on a
        later line counts for less: `TEMPLATE_DECAY` per place. A line no article quotes exactly
        matches one that shares most of its words, weighted by IDF: two messages that share only
        their common words (`ImportError: cannot import name … from`) are not a match. Words the
        index leaves out (`no`, `for`, `from`) weigh as the rarest: in a message's fixed wording
        they are as much the message as its nouns.
        """
        found: dict[int, tuple[float, int]] = {}
        qwords = [(t, template_words(t), 1.0 / (1.0 + TEMPLATE_DECAY * i)) for i, t in enumerate(sig.templates[:20])]
        qmass = [self._words_mass(qw) for _, qw, _ in qwords]
        for t, _, weight in qwords:
            for ai, li in self._places(t):
                strength = weight * self._line_weight(ai, li)
                if ai not in excluded and strength > found.get(ai, (0.0, -1))[0]:
                    found[ai] = (strength, li)
        for ai in candidates:
            if ai in excluded:
                continue
            best = found.get(ai, (0.0, -1))
            line_mass = self._line_masses(ai)
            for (_, qw, weight), q_mass in zip(qwords, qmass):
                if len(qw) < 3 or weight <= best[0]:
                    continue
                for li, aw in enumerate(self.articles[ai].template_words):
                    shared = qw & aw
                    if not shared:
                        continue
                    mass = min(q_mass, line_mass[li])
                    strength = self._words_mass(shared) / mass * min(1.0, min(len(qw), len(aw)) / 8) if mass else 0.0
                    if strength >= 0.5 and strength * weight * self._line_weight(ai, li) > best[0]:
                        best = (strength * weight * self._line_weight(ai, li), li)
            if best[0] > 0:
                found[ai] = best
        return found

    def _words_mass(self, words: Iterable[str]) -> float:
        """The summed IDF of some words; fsum, so the same whatever order a set iterates in (string
        hashes change with each process: a plain sum's last bits would, and so could a verdict)."""
        return math.fsum(map(self._idf, words))

    def _line_masses(self, ai: int) -> tuple[float, ...]:
        """`_words_mass` of each of the article's error lines, worked out once per snapshot."""
        masses = self._line_mass_cache.get(ai)
        if masses is None:
            masses = self._line_mass_cache[ai] = tuple(self._words_mass(aw) for aw in self.articles[ai].template_words)
        return masses

    def _places(self, template: str) -> list[tuple[int, int]]:
        """(article, error line) of every live article quoting this exact masked error line."""
        places = []
        for seg, global_of in zip(self.segments, self._global_of):
            for local, line in seg.exact_templates.get(template.casefold(), ()):
                ai = int(global_of[local])
                if ai >= 0:
                    places.append((ai, line))
        return places

    def _line_weight(self, ai: int, line: int) -> float:
        return GENERIC_LINE_WEIGHT if self.articles[ai].generic_lines[line] else 1.0

    def _component_match(self, sig: Signature, ai: int) -> float:
        if not sig.components:
            return 0.0
        a = self.articles[ai]
        tags = {t.lower() for t in a.tags}
        mine = {c.split(".")[0] for c in a.components} | tags
        deep = {".".join(c.split(".")[:2]) for c in a.components}
        score = 0.0
        for c in sig.components[:3]:
            parts = c.split(".")
            # a subsystem the article is tagged with (`torch.distributed.fsdp` and the tag `fsdp`)
            # names it as surely as its own frames do
            if ".".join(parts[:2]) in deep or any(p.strip("_").lower() in tags for p in parts[2:]):
                score = max(score, 1.0)
            elif parts[0] in mine:
                score = max(score, 0.5)
        return score

    def _coverage(self, q_tokens, have: frozenset[str]) -> float:
        """Share of the IDF mass of `q_tokens` found in `have`. The query's words in an article: low when the
        corpus has no word for it; an article's title in the query's words: `title_recall`."""
        q = frozenset(q_tokens)
        total = self._words_mass(q)
        return self._words_mass(q & have) / total if total else 0.0

    # -- the search -------------------------------------------------------

    def gather(self, query: str, always_dense: bool = False, exclude: frozenset[str] | set[str] = frozenset()
               ) -> "Candidates":
        """All evidence for a query, over a weight-independent candidate pool.

        Lexical, template and component evidence come first; the dense model is asked only
        when it could still change the top result (`always_dense`: ask it anyway, for tuning).
        `exclude`: article ids to leave out, as if the corpus lacked them (the leave-article-out
        evaluation asks what kb says when the right article is missing).
        """
        query = validate_query(query)
        sig = focus(self.extractor(query))
        printed = as_printed(query)  # what the frames, the numbers and a lineless paste are read from
        # No line read as an error: what the signature kept is the user's words, and the error they
        # quote may be in a shape it does not know (lowercased, inside a blog's Chinese quotes): search the paste.
        qtext = sig.text() if sig.lines else "\n".join(
            filter(None, (without_absent_fields(printed)[:2000], " ".join(sig.components))))
        q_tokens = self.tokenizer(qtext)
        q_lang = detect_lang(sig.prose or qtext)
        expansion = self.glossary.expand(sig.prose or qtext)
        q_set = set(q_tokens)
        exp_tokens = [t for t in self.tokenizer(expansion.added_text) if t not in q_set] if expansion.added_text else []
        calls = frame_calls(printed)
        call_tokens = [t for t in self.tokenizer("\n".join(calls)) if t not in q_set] if calls else []
        facts = extract_facts(printed)
        excluded = frozenset(self.index_of[a] for a in exclude if a in self.index_of)
        gone = np.array(sorted(excluded), dtype=np.int64)

        def per_article(field: str, tokens: list[str]) -> np.ndarray:
            scores = self._per_article_max(self.index.scores(field, tokens))
            scores[gone] = 0.0
            return scores

        lex_chunks = self.index.scores("lexical", q_tokens)
        lex = self._per_article_max(lex_chunks)
        lex[gone] = 0.0
        exp = per_article("lexical", exp_tokens)
        bridge = per_article("bridge", q_tokens)
        call = per_article("lexical", call_tokens)
        signals = [lex, exp, bridge, call]
        prose = 1.0 if is_prose(sig, qtext) else 0.0
        # One scale for the lexical signals, so a weak bridge match stays weak next to an exact one.
        top = float(max(s.max(initial=0.0) for s in signals)) or 1.0

        def rows(ids: list[int], templates: dict[int, tuple[float, int]]) -> np.ndarray:
            """Feature rows (FEATURES) of these articles; the dense column is filled in later, if at all."""
            if not ids:
                return np.zeros((0, len(FEATURES)), dtype=np.float32)
            return np.column_stack([
                lex[ids] / top, exp[ids] / top, bridge[ids] / top, np.zeros(len(ids), dtype=np.float32),
                np.array([templates.get(ai, (0.0, -1))[0] for ai in ids], dtype=np.float32),
                np.array([self._component_match(sig, ai) for ai in ids], dtype=np.float32),
                np.array([self.articles[ai].lang != q_lang for ai in ids], dtype=np.float32),
                np.full(len(ids), prose, dtype=np.float32),
                call[ids] / top,
                np.array([check(self.articles[ai].condition, facts) for ai in ids], dtype=np.float32),
            ])

        lexical_pool = _top_articles(signals)
        templates = self._templates(sig, lexical_pool, excluded)
        ids = sorted(lexical_pool | set(templates))
        feats = rows(ids, templates)
        dense_chunks = np.zeros(self.n_rows, dtype=np.float32)
        dense_used = self.n_rows > 0 and self.weights.dense > 0 and (
            always_dense or self.needs_dense(self.score_matrix(feats, self.weights)))
        if dense_used:
            qvec = self.encoder.encode([_dense_text(sig, qtext)], query=True)
            for sim, row in self.index.dense_hits(qvec, DENSE_CANDIDATES):
                dense_chunks[row] = max(sim, 0.0)
            dense = self._per_article_max(dense_chunks)
            dense[gone] = 0.0
            added = sorted(_top_articles([dense]) - set(ids))
            templates.update(self._templates(sig, set(added), excluded))
            ids += added
            feats = np.vstack([feats, rows(added, templates)])
            feats[:, FEATURES.index("dense")] = dense[ids]
        # What the evidence of every candidate shares, computed once: it depends on the query alone.
        q_mass = self._words_mass(q_set)
        unknown = self._words_mass(t for t in q_set if t not in self.df) / q_mass if q_mass else 0.0
        return Candidates(sig=sig, q_tokens=q_tokens, exp_tokens=exp_tokens, expanded_terms=list(expansion.fired),
                          pool=ids, features=feats, templates=templates, chunk_scores=lex_chunks + dense_chunks,
                          dense_used=dense_used, q_mass=q_mass, unknown=unknown, rare=self._rarest(q_tokens),
                          calls=calls, facts=facts, excluded=excluded, scale=top, printed=printed)

    def needs_dense(self, lexical_scores: np.ndarray) -> bool:
        """Could the dense model still change the top result?

        Its term in the fused score is `weights.dense * cosine`, with the cosine clipped to
        0..1, so when the leader's score is ahead of the runner-up's by at least
        `weights.dense`, no dense similarity can reorder them. On the eval set that holds
        for about half the queries (most pasted errors with an exact template match), and
        skipping the encoder there saves ~90% of their search time.
        """
        if len(lexical_scores) == 0:
            return True
        if len(lexical_scores) == 1:
            return float(lexical_scores[0]) < self.weights.dense
        first, second = np.partition(-lexical_scores, 1)[:2]
        return float(second - first) < self.weights.dense

    @staticmethod
    def score_matrix(features: np.ndarray, w: RankingWeights) -> np.ndarray:
        """Fusion: exact evidence plus the bilingual bridge, boosted when the article is in the other language."""
        lex, exp, bridge, dense, tpl, comp, cross, prose, calls, facts = features.T
        # A question in words leans on the glossary, most of all for an article in the other
        # language; a paste with error strings has exact evidence and leans on it far less.
        bilingual = (w.expansion * exp + w.bridge * bridge) * np.where(prose > 0, 1.0 + w.cross_boost * cross, w.code_bilingual)
        return (w.lexical * lex + bilingual + w.dense * dense + w.template * tpl + w.component * comp
                + w.calls * calls + np.where(facts < 0, w.facts_against, w.facts) * facts)

    def rank(self, c: "Candidates", weights: RankingWeights) -> list[tuple[float, int]]:
        scores = self.score_matrix(c.features, weights) if len(c.pool) else np.zeros(0)
        scored = [(float(sc), ai) for sc, ai in zip(scores, c.pool)]
        scored.sort(key=lambda x: (-x[0], self.articles[x[1]].id))
        return scored

    def _article_tokens(self, ai: int) -> frozenset[str]:
        tokens = self._tokens_cache.get(ai)
        if tokens is None:
            seg = self.article_segment[ai]
            with seg.lock:
                rows = seg.db.execute("SELECT tokens FROM chunks WHERE article_id = ?", (self.articles[ai].id,)).fetchall()
            tokens = frozenset(t for r in rows for t in r[0].split())
            if len(self._tokens_cache) > 4096:
                self._tokens_cache.clear()
            self._tokens_cache[ai] = tokens
        return tokens

    def evidence(self, c: "Candidates", ai: int, margin: float = 0.0) -> Evidence:
        """Everything that ties article `ai` to the query, named (kb/verdict.py reads it)."""
        f = dict(zip(FEATURES, c.features[c.pool.index(ai)].tolist()))
        a = self.articles[ai]
        strength, line = c.templates.get(ai, (0.0, -1))
        sharing = self._sharing(a.templates[line], c.excluded) if line >= 0 else 1
        have = self._article_tokens(ai)
        q_exc = short_exception(c.sig.exception)
        if q_exc is None:
            exc_match = 0.0
        elif q_exc in a.exceptions:
            exc_match = 1.0
        elif q_exc.lower() in have:
            exc_match = 0.5
        else:  # another exception; neutral when one of the paste's error lines matched the article's
            exc_match = -1.0 if f["template"] < 0.5 else 0.0
        q_subject = next(filter(None, map(subject, c.sig.lines)), None)
        a_subject = self._article_subject(ai, line)
        return Evidence(
            lexical=f["lexical"], expansion=max(f["expansion"], f["bridge"]),
            dense=f["dense"] if c.dense_used else None, template=f["template"],
            template_share=strength * math.log(sharing), component=f["component"],
            coverage=self._coverage(c.q_tokens + c.exp_tokens, have), unknown=c.unknown,
            margin=margin, exc_match=exc_match,
            # An unknown error type says "not covered" only when no error line matched either: a
            # watchdog line an article quotes, ending in a `DistBackendError` it never names, is covered.
            exc_unknown=1.0 if q_exc and q_exc.lower() not in self.df and f["template"] < 0.5 else 0.0,
            rare_share=sum(t in have for t in c.rare) / len(c.rare) if c.rare else 0.0,
            platform_conflict=1.0 if platform_clash(c.q_tokens, have, self._own_words(ai)) else 0.0,
            facts=f["facts"],
            subject_conflict=1.0 if q_subject and a_subject and q_subject != a_subject and not mentions(have, q_subject) else 0.0,
            template_words=min(len(a.template_words[line]), 12) / 12 * strength if line >= 0 else 0.0,
            calls=f["calls"], prose=f["prose"], cross=f["cross"], agreement=self._agreement(c, ai),
            lexical_abs=self._lexical_abs(c, f["lexical"]),
            expansion_cover=self._coverage(c.exp_tokens, have),
            points_elsewhere=1.0 if c.sig.points_elsewhere() else 0.0,
            title_recall=self._coverage(self._title_words(ai), c.words),
        )

    def _article_subject(self, ai: int, line: int) -> str | None:
        """The package the article's matched error line is about; when that line names none (pip's
        `× python setup.py bdist_wheel did not run successfully.`), the one package its error lines name."""
        if line < 0:
            return None
        a = self.articles[ai]
        own = subject(a.error_lines[line])
        if own:
            return own
        named = {s for s in map(subject, a.error_lines) if s}
        return named.pop() if len(named) == 1 else None

    @staticmethod
    def _agreement(c: "Candidates", ai: int) -> float:
        """Share of the signals that could vote which rank this article first; a signal with no
        evidence at all counts as a vote not won (a match on meaning alone is not agreement)."""
        row = c.pool.index(ai)
        votes = won = 0
        for name in AGREEING_SIGNALS:
            if name == "dense" and not c.dense_used:
                continue
            column = c.features[:, FEATURES.index(name)]
            votes += 1
            won += column.max(initial=0.0) > 0 and column[row] >= column.max()
        return won / votes if votes else 0.0

    def _against_runner_up(self, c: "Candidates", ev: Evidence, scored: list[tuple[float, int]]) -> Evidence:
        """The top result's evidence with how far it leads the runner-up on the specific evidence
        (rare words, coverage, error line): a right answer tends to stand out, a look-alike to tie."""
        if len(scored) < 2:
            return replace(ev, rare_lead=ev.rare_share, coverage_lead=ev.coverage, template_lead=ev.template_words)
        second = self.evidence(c, scored[1][1])
        return replace(ev, rare_lead=ev.rare_share - second.rare_share, coverage_lead=ev.coverage - second.coverage,
                       template_lead=ev.template_words - second.template_words)

    def _title_words(self, ai: int) -> frozenset[str]:
        title = self._title_tokens.get(ai)
        if title is None:
            title = self._title_tokens[ai] = frozenset(self.tokenizer(self.articles[ai].title))
        return title

    def _own_words(self, ai: int) -> frozenset[str]:
        """The words of the article's title and tags: what it is about, not what it mentions in passing."""
        own = self._own_tokens.get(ai)
        if own is None:
            own = self._own_tokens[ai] = self._title_words(ai) | frozenset(self.tokenizer(" ".join(self.articles[ai].tags)))
        return own

    def _title_missing(self, ai: int, query_tokens: frozenset[str], paste: str = "") -> tuple[str, ...]:
        """The title's rarest words that the query lacks: what the closest article is about and the paste is not.
        Whole words only: not the pieces the tokenizer also keeps (`addr` of `master_addr`, `布式` of `分布式`);
        none that appears anywhere in the paste (`paste`, lowercased), in the user's code for instance, and no
        Chinese word when the paste has no Chinese (that an English paste lacks `配置` tells the user nothing)."""
        title = self._title_words(ai)
        chinese = HAN_CHAR.search(paste) is not None
        missing = {t for t in title if t not in query_tokens and t in self.df and len(t) > (1 if t[0] > "~" else 2)
                   and t not in paste and (chinese or not HAN_CHAR.match(t))}
        whole = {t for t in missing if not any(t != o and t in o for o in title)}
        return tuple(sorted(whole, key=lambda t: (-self._idf(t), t))[:3])

    def _lexical_abs(self, c: "Candidates", lexical: float) -> float:
        """The article's best chunk's BM25 over what a chunk holding every query word once would
        score (the sum of their IDFs): how much of the query one passage of the article answers."""
        return min(1.5, lexical * c.scale / c.q_mass) if c.q_mass else 0.0

    def _sharing(self, template: str, excluded: frozenset[int]) -> int:
        """How many articles (left in play) quote this error template."""
        return max(1, len({ai for ai, _ in self._places(template) if ai not in excluded}))

    def _rarest(self, q_tokens: list[str]) -> list[str]:
        """The query's rarest words among those the corpus knows: words no article uses are the
        `unknown` feature's evidence, and would otherwise crowd every article out of this one."""
        return sorted({t for t in q_tokens if t in self.df}, key=lambda t: (-self._idf(t), t))[:RARE_WORDS]

    def context(self, c: "Candidates", ai: int, matched: str | None) -> Context:
        """The names a verdict's reason may quote."""
        a = self.articles[ai]
        have = self._article_tokens(ai)
        strength, line = c.templates.get(ai, (0.0, -1))
        exception = short_exception(c.sig.exception)
        clash = platform_clash(c.q_tokens, have, self._own_words(ai))
        error_tokens = self._error_tokens(c)
        return Context(
            exception=exception,
            exception_known=exception is None or exception.lower() in self.df,
            query_platforms=clash[0] if clash else (),
            article_platforms=clash[1] if clash else (),
            article_exceptions=tuple(sorted(a.exceptions)),
            matched_error=matched,
            condition=self._condition_text(ai),
            rare_missing=tuple(t for t in self._rarest(error_tokens) if t not in have and t in self.df),
            unknown_words=self._unknown_words(error_tokens, c.q_tokens),
            sharing=self._sharing(a.templates[line], c.excluded) if line >= 0 else 1,
            query_subject=next(filter(None, map(subject, c.sig.lines)), None),
            article_subject=self._article_subject(ai, line),
            ruled_out=self._ruled_out(c, ai),
            title_missing=self._title_missing(ai, c.words, c.printed.lower()),
        )

    def _unknown_words(self, error_tokens: list[str], q_tokens: list[str]) -> tuple[str, ...]:
        """Up to three words of the paste that no article uses, for a reason to name: its error lines' first
        (`bitsandbyte`, a typo), then the rest of the query's; never a link, which no article could hold."""
        for tokens in (error_tokens, q_tokens):
            words = tuple(dict.fromkeys(t for t in tokens if t not in self.df and "://" not in t and not _URL_HOST.match(t)))
            if words:
                return words[:3]
        return ()

    def _ruled_out(self, c: "Candidates", top: int) -> tuple[str, str] | None:
        """(id, condition) of an article that quotes the paste's error line but whose condition the paste's numbers
        contradict, when another article leads: what a reason should say rather than "no article quotes this line"."""
        facts = c.features[:, FEATURES.index("facts")]
        quoting = [(strength, ai) for ai, (strength, _) in c.templates.items()
                   if ai != top and strength >= QUOTED_LINE and facts[c.pool.index(ai)] < 0]
        if not quoting:
            return None
        ai = max(quoting)[1]
        return self.articles[ai].id, self._condition_text(ai) or ""

    def _error_tokens(self, c: "Candidates") -> list[str]:
        """The words a reason may name as the paste's distinctive ones: those of its error lines and components
        when it has error lines, else its identifiers (`data_path`, `main.py`, `sm_90`). The user's own words
        (`thanks`, `however`, `updating`, `你好`) are rare in technical articles too, but saying an article
        lacks them tells the user nothing."""
        if not c.sig.lines:
            return [t for t in c.q_tokens if _IDENTIFIER.search(t)]
        return self.tokenizer("\n".join((*c.sig.lines, " ".join(c.sig.components))))

    def _condition_text(self, ai: int) -> str | None:
        import ast

        cond = self.articles[ai].condition
        return ast.unparse(cond) if cond is not None else None

    def search(self, query: str, top_k: int = 5, exclude: frozenset[str] | set[str] = frozenset()) -> SearchResponse:
        c = self.gather(query, exclude=exclude)
        scored = self.rank(c, self.weights)
        results = []
        ceiling = 1.0
        for rank, (score, ai) in enumerate(scored[:top_k]):
            ev = self.evidence(c, ai, lead(scored) if rank == 0 else 0.0)
            if rank == 0:
                ev = self._against_runner_up(c, ev, scored)
            # A lower result never reads as more trustworthy than one above it.
            conf = ceiling = min(ceiling, self.model.probability(ev))
            results.append(self._result(ai, score, conf, ev, c.templates.get(ai), c.chunk_scores))
        top = results[0] if results else None
        verdict = decide(self.model, top.evidence if top else None, top.confidence if top else 0.0,
                         self.context(c, scored[0][1], top.matched_error) if top else Context())
        sig = c.sig
        return SearchResponse(
            results=results,
            confident=verdict.confident,
            verdict=verdict.kind,
            reason=verdict.reason,
            expanded_terms=c.expanded_terms,
            signature={
                "exception": sig.exception,
                "lines": list(sig.lines[:5]),
                "templates": list(sig.templates[:5]),
                "components": list(sig.components),
            },
        )

    def _result(self, ai: int, score: float, confidence: float, ev: Evidence, tpl: tuple[float, int] | None,
                chunk_scores: np.ndarray) -> Result:
        a = self.articles[ai]
        seg = self.article_segment[ai]
        mine = np.nonzero(self.chunk_article == ai)[0]
        best = int(self.row_chunk[mine[np.argmax(chunk_scores[mine])]]) if len(mine) else None
        with seg.lock:
            row = seg.db.execute("SELECT root_cause, fix FROM articles WHERE id = ?", (a.id,)).fetchone()
            text = seg.db.execute("SELECT text FROM chunks WHERE id = ?", (best,)).fetchone()[0] if best is not None else ""
        matched = a.error_lines[tpl[1]] if tpl and tpl[1] >= 0 else None
        return Result(
            article_id=a.id, title=a.title, lang=a.lang, score=score, confidence=confidence,
            root_cause=row["root_cause"], fix=row["fix"], snippet=snippet(text), source=a.source,
            tags=list(a.tags), matched_error=matched, evidence=ev,
        )

    # -- articles ---------------------------------------------------------

    def get_article(self, article_id: str) -> dict:
        ai = self.index_of.get(article_id)
        row = None
        if ai is not None:
            seg = self.article_segment[ai]
            with seg.lock:
                row = seg.db.execute("SELECT * FROM articles WHERE id = ?", (article_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no article with id {article_id!r}")
        return {
            "article_id": row["id"], "title": row["title"], "lang": row["lang"], "tags": json.loads(row["tags"]),
            "source": row["source"], "meta": json.loads(row["meta"]), "root_cause": row["root_cause"],
            "fix": row["fix"], "error_lines": json.loads(row["error_lines"]), "body": row["body"],
            "path": row["path"],
        }

    def list_ids(self) -> list[str]:
        return [a.id for a in self.articles]

    def stats(self) -> dict:
        m = self.manifest
        return {"articles": m.articles, "chunks": m.chunks, "model_id": m.model_id,
                "format_version": m.format_version, "snapshot": self.path.name, "built_at": m.created,
                "segments": len(self.segments), "backend": m.backend}

    def close(self) -> None:
        """Close the segments this searcher opened itself (shared ones close when let go)."""
        if self._owns_segments:
            for seg in self.segments:
                seg.close()


def _dense_text(sig: Signature, qtext: str) -> str:
    """What the dense model reads: the query text up to DENSE_QUERY_CHARS, but never without the paste's first
    error line. A long story before the error (an issue's environment, what the user tried) would fill the
    window with words and leave the model blind to the one line that names the failure."""
    window = qtext[:DENSE_QUERY_CHARS]
    line = sig.lines[0][:DENSE_QUERY_CHARS // 2] if sig.lines else ""
    if not line or line in window:
        return window
    return qtext[:DENSE_QUERY_CHARS - len(line) - 1] + "\n" + line


def _top_articles(signals: list[np.ndarray]) -> set[int]:
    """The candidate pool: the best POOL_PER_SIGNAL articles of each signal that have any score."""
    pool: set[int] = set()
    for signal in signals:
        best = np.argpartition(-signal, POOL_PER_SIGNAL)[:POOL_PER_SIGNAL] if len(signal) > POOL_PER_SIGNAL else range(len(signal))
        pool.update(int(i) for i in best if signal[i] > 0)
    return pool
