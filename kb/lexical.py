"""BM25 over several index segments with one set of corpus statistics.

A snapshot is a chain of segments (kb/store.py): the base built by a full ingest and small
deltas added by single-article writes, with tombstones for the chunks those writes replaced.
Each segment stores raw postings (term frequency per chunk, chunk lengths), not scores, so
IDF (from the df summed over segments, tombstoned chunks taken out) and the length
normalisation (from the live chunks' average length) are the corpus's own at query time:
the scores are exactly those of one index built over the live chunks.

Scoring is BM25 as bm25s's default ("lucene": idf = ln(1 + (N - df + .5) / (df + .5)),
tf part = tf / (tf + k1 (1 - b + b dl / avgdl)), k1 = 1.5, b = 0.75).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

K1 = 1.5
B = 0.75


@dataclass(frozen=True)
class Postings:
    """One segment's inverted index: for each token, the rows (chunks) holding it and how often."""

    vocab: dict[str, int]
    indptr: np.ndarray  # token t's postings are rows[indptr[t]:indptr[t + 1]]
    rows: np.ndarray
    tf: np.ndarray
    doc_len: np.ndarray  # tokens per row

    @classmethod
    def build(cls, token_lists: list[list[str]]) -> "Postings":
        vocab: dict[str, int] = {}
        by_token: list[list[tuple[int, int]]] = []
        for row, tokens in enumerate(token_lists):
            for token, count in Counter(tokens).items():
                t = vocab.setdefault(token, len(vocab))
                if t == len(by_token):
                    by_token.append([])
                by_token[t].append((row, count))
        sizes = np.array([len(p) for p in by_token], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        flat = [x for p in by_token for x in p]
        rows = np.array([r for r, _ in flat], dtype=np.int32)
        tf = np.array([c for _, c in flat], dtype=np.float32)
        doc_len = np.array([len(t) for t in token_lists], dtype=np.int64)
        return cls(vocab, indptr, rows, tf, doc_len)

    def save(self, path: Path) -> None:
        path.mkdir()
        (path / "vocab.json").write_text(json.dumps(list(self.vocab), ensure_ascii=False))
        for name in ("indptr", "rows", "tf", "doc_len"):
            np.save(path / f"{name}.npy", getattr(self, name))

    @classmethod
    def load(cls, path: Path) -> "Postings":
        words = json.loads((path / "vocab.json").read_text())
        arrays = {name: np.load(path / f"{name}.npy") for name in ("indptr", "rows", "tf", "doc_len")}
        return cls({w: i for i, w in enumerate(words)}, **arrays)

    @property
    def n_rows(self) -> int:
        return len(self.doc_len)

    def df(self, dead_rows: np.ndarray | None = None) -> dict[str, int]:
        """Document frequency of each token over the rows not in `dead_rows` (a boolean mask)."""
        counts = np.diff(self.indptr)
        if dead_rows is not None and dead_rows.any() and len(self.rows):
            dead_hits = dead_rows[self.rows].astype(np.int64)
            counts = counts - np.add.reduceat(dead_hits, self.indptr[:-1]) * (counts > 0)
        return {w: int(n) for w, n in zip(self.vocab, counts.tolist()) if n > 0}


class LexicalIndex:
    """BM25 over the live rows of several segments, numbered in chain order (`positions`)."""

    def __init__(self, segments: list[Postings], positions: list[np.ndarray]):
        """`positions[i][row]`: the global row of segment i's row, or -1 for a tombstoned one."""
        self.segments = segments
        self.positions = positions
        self.n_rows = int(sum(int((p >= 0).sum()) for p in positions))
        df: Counter = Counter()
        total_len = 0
        for seg, pos in zip(segments, positions):
            dead = pos < 0
            df.update(seg.df(dead if dead.any() else None))
            total_len += int(seg.doc_len[~dead].sum())
        self.df: dict[str, int] = dict(df)
        # A segment with no tombstones maps its rows to one contiguous run: an offset is enough.
        self._offset = [int(p[0]) if len(p) and (p >= 0).all() else None for p in positions]
        avgdl = total_len / self.n_rows if self.n_rows else 1.0
        # The length part of each row's denominator, fixed for this set of live rows.
        self._norm = [(K1 * ((1 - B) + B * seg.doc_len / avgdl)) for seg in segments]

    def idf(self, token: str) -> float:
        df = self.df.get(token, 0)
        return math.log(1 + (self.n_rows - df + 0.5) / (df + 0.5))

    def scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 of each live row for these query tokens (each counted once, unknown ones ignored)."""
        out = np.zeros(self.n_rows, dtype=np.float32)
        for token in dict.fromkeys(tokens):
            if token not in self.df:
                continue
            idf = np.float32(self.idf(token))
            for seg, pos, norm, offset in zip(self.segments, self.positions, self._norm, self._offset):
                t = seg.vocab.get(token)
                if t is None:
                    continue
                start, end = seg.indptr[t], seg.indptr[t + 1]
                rows, tf = seg.rows[start:end], seg.tf[start:end]
                weight = (idf * (tf / (norm[rows] + tf))).astype(np.float32)
                if offset is not None:
                    out[rows + offset] += weight
                else:
                    where = pos[rows]
                    live = where >= 0
                    out[where[live]] += weight[live]
        return out
