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
from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

K1 = 1.5
B = 0.75


def length_norm(doc_len, avgdl: float):
    """BM25's length part of a row's denominator, k1 (1 - b + b dl / avgdl): a row's score for a token
    is idf * tf / (tf + length_norm). Here and in the qdrant backend's document weights."""
    return K1 * ((1 - B) + B * doc_len / avgdl)


@dataclass(frozen=True)
class Postings:
    """One segment's inverted index: for each token, the rows (chunks) holding it and how often."""

    vocab: dict[str, int]
    indptr: np.ndarray  # token t's postings are rows[indptr[t]:indptr[t + 1]]
    rows: np.ndarray
    tf: np.ndarray
    doc_len: np.ndarray  # tokens per row

    def save(self, path: Path) -> None:
        path.mkdir()
        (path / "vocab.json").write_text(json.dumps(list(self.vocab), ensure_ascii=False))
        for name in ("indptr", "rows", "tf", "doc_len"):
            np.save(path / f"{name}.npy", getattr(self, name))

    @classmethod
    def load(cls, path: Path) -> "Postings":
        words = json.loads((path / "vocab.json").read_text())
        # rows and tf are mapped, not read: a search touches only its tokens' postings, so at 100k
        # articles most of their ~700 MB never needs to be in memory
        arrays = {name: np.load(path / f"{name}.npy", mmap_mode="r" if name in ("rows", "tf") else None)
                  for name in ("indptr", "rows", "tf", "doc_len")}
        return cls({w: i for i, w in enumerate(words)}, **arrays)

    def df(self, token: str, dead_rows: np.ndarray | None = None) -> int:
        """How many rows hold `token`, not counting the rows marked in `dead_rows`."""
        t = self.vocab.get(token)
        if t is None:
            return 0
        start, end = self.indptr[t], self.indptr[t + 1]
        if dead_rows is None:
            return int(end - start)
        return int(end - start) - int(dead_rows[self.rows[start:end]].sum())


class SummedDf:
    """Document frequency over a chain of segments, tombstoned rows left out, looked up per
    token rather than merged into one dict (a write would otherwise cost a pass over the
    whole vocabulary). Reads like a dict of the tokens whose df is above 0."""

    def __init__(self, segments: list[Postings], dead: list[np.ndarray | None]):
        self._parts = list(zip(segments, dead))
        self._seen: dict[str, int] = {}  # a search asks for the same few tokens many times

    def get(self, token: str, default: int = 0) -> int:
        n = self._seen.get(token)
        if n is None:
            n = sum(seg.df(token, dead) for seg, dead in self._parts)
            if len(self._seen) > 200_000:
                self._seen.clear()
            self._seen[token] = n
        return n if n > 0 else default

    def __contains__(self, token: str) -> bool:
        return self.get(token) > 0


class PostingsBuilder:
    """Postings built one row at a time into compact arrays: a 100k-article ingest must not hold
    a Python object per (token, chunk) pair."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        # 10 bytes a (token, chunk) pair: ~45M pairs per field at 100k articles
        self._token, self._row, self._tf, self._len = array("i"), array("i"), array("H"), array("q")

    def add(self, tokens: list[str]) -> None:
        row = len(self._len)
        self._len.append(len(tokens))
        for token, count in Counter(tokens).items():
            self._token.append(self.vocab.setdefault(token, len(self.vocab)))
            self._row.append(row)
            self._tf.append(min(count, 65535))

    def build(self) -> Postings:
        token = np.frombuffer(self._token, dtype=np.int32) if len(self._token) else np.zeros(0, np.int32)
        order = np.argsort(token, kind="stable")  # by token, rows ascending within each
        counts = np.bincount(token, minlength=len(self.vocab)) if len(token) else np.zeros(len(self.vocab), np.int64)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        del token, counts
        self._token = array("i")
        rows = (np.frombuffer(self._row, dtype=np.int32) if len(self._row) else np.zeros(0, np.int32))[order]
        self._row = array("i")
        tf = (np.frombuffer(self._tf, dtype=np.uint16) if len(self._tf) else np.zeros(0, np.uint16))[order].astype(np.float32)
        self._tf = array("H")
        doc_len = np.frombuffer(self._len, dtype=np.int64).copy() if len(self._len) else np.zeros(0, np.int64)
        return Postings(self.vocab, indptr, rows, tf, doc_len)


class LexicalIndex:
    """BM25 over the live rows of several segments, numbered in chain order (`positions`)."""

    def __init__(self, segments: list[Postings], positions: list[np.ndarray]):
        """`positions[i][row]`: the global row of segment i's row, or -1 for a tombstoned one."""
        self.segments = segments
        self.positions = positions
        self.n_rows = int(sum(int((p >= 0).sum()) for p in positions))
        total_len = 0
        dead_rows = []
        for seg, pos in zip(segments, positions):
            dead = pos < 0
            dead_rows.append(dead if dead.any() else None)
            total_len += int(seg.doc_len[~dead].sum())
        self.df = SummedDf(segments, dead_rows)
        # A segment with no tombstones maps its rows to one contiguous run: an offset is enough.
        self._offset = [int(p[0]) if len(p) and (p >= 0).all() else None for p in positions]
        avgdl = total_len / self.n_rows if self.n_rows else 1.0
        # The length part of each row's denominator, fixed for this set of live rows.
        self._norm = [length_norm(seg.doc_len, avgdl) for seg in segments]

    def idf(self, token: str) -> float:
        df = self.df.get(token, 0)
        return math.log(1 + (max(1, self.n_rows) - df + 0.5) / (df + 0.5))

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
