"""One index segment, opened for reading: its articles, chunk rows, postings and vectors.

A segment never changes once written, so an open one is shared by every searcher whose
snapshot lists it (see `SegmentCache`): after a one-article write, only the new delta
segment is read from disk.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from .facts import parse_condition
from .lexical import Postings
from .signature import GENERIC_LINE
from .store import SnapshotFiles, connect
from .text import HAN
from .trust import exception_names

_WORD = re.compile(f"<[A-Z]+>|[A-Za-z_][A-Za-z0-9_.]*|[{HAN}]+")


def template_words(template: str) -> frozenset[str]:
    """The literal words of a masked error line (placeholders such as <NUM> left out), lower-cased."""
    return frozenset(w.lower() for w in _WORD.findall(template) if not w.startswith("<"))


@dataclass(frozen=True)
class ArticleMeta:
    id: str
    title: str
    lang: str
    tags: tuple[str, ...]
    source: str | None
    error_lines: tuple[str, ...]
    templates: tuple[str, ...]
    components: tuple[str, ...]
    exceptions: frozenset[str]
    """Short names of the exception classes its error lines raise (`OutOfMemoryError`)."""
    condition: object | None
    """Parsed `applies_when` front matter (kb/facts.py), or None."""
    template_words: tuple[frozenset[str], ...] = ()
    """`template_words` of each template, worked out once per segment, not per snapshot."""
    generic_lines: tuple[bool, ...] = ()
    """Whether each template is a generic line (kb.signature.GENERIC_LINE: a hint, a launcher summary)."""


class Segment:
    """The read side of one segment directory. Its SQLite connection is closed when the last
    searcher using the segment lets go of it."""

    def __init__(self, path: Path):
        self.path = path
        files = SnapshotFiles(path)
        self.db = connect(files.db, readonly=True)
        self.lock = threading.Lock()
        self.articles: list[ArticleMeta] = []
        for r in self.db.execute("SELECT id, title, lang, tags, source, meta, error_lines, templates, components FROM articles ORDER BY id"):
            error_lines = tuple(json.loads(r["error_lines"]))
            templates = tuple(json.loads(r["templates"]))
            condition = json.loads(r["meta"]).get("applies_when")
            self.articles.append(ArticleMeta(
                r["id"], r["title"], r["lang"], tuple(json.loads(r["tags"])), r["source"],
                error_lines, templates, tuple(json.loads(r["components"])),
                exception_names(error_lines), parse_condition(condition) if isinstance(condition, str) else None,
                tuple(template_words(t) for t in templates), tuple(bool(GENERIC_LINE.search(t)) for t in templates),
            ))
        self.exact_templates: dict[str, list[tuple[int, int]]] = {}
        """Masked error line, case-folded -> (index in `articles`, line) of each article quoting it. Case
        never tells two errors apart, and forums and editors lowercase pastes (`runtimeerror: cuda error: …`)."""
        for ai, a in enumerate(self.articles):
            for line, t in enumerate(a.templates):
                self.exact_templates.setdefault(t.casefold(), []).append((ai, line))
        self.chunk_ids = np.load(files.chunk_ids)
        local = {a.id: i for i, a in enumerate(self.articles)}
        owner = dict(self.db.execute("SELECT id, article_id FROM chunks").fetchall())
        self.row_article = np.array([local[owner[int(c)]] for c in self.chunk_ids], dtype=np.int64)
        """Each row of the lexical and dense indexes: the index of its article in `articles`."""
        self.lexical = Postings.load(files.lexical)
        self.bridge = Postings.load(files.bridge)
        self.dense = faiss.read_index(str(files.dense)) if files.dense.exists() else None
        """FAISS vectors (the local backend); None where they live in Qdrant."""

    def close(self) -> None:
        self.db.close()

    def __del__(self) -> None:
        # The connection sits in a reference cycle (its statement cache): close it as soon as the
        # segment is dropped, not at some later collection (its file may already be pruned).
        db = getattr(self, "db", None)
        if db is not None:
            db.close()


class SegmentCache:
    """The open segments of the snapshot being served, reused by the next snapshot's searcher."""

    def __init__(self) -> None:
        self._open: dict[Path, Segment] = {}
        self._lock = threading.Lock()

    def get(self, paths: list[Path]) -> list[Segment]:
        """These segments, opening only the ones not open yet; the others are let go."""
        with self._lock:
            segments = [self._open.get(p) or Segment(p) for p in paths]
            self._open = dict(zip(paths, segments))
            return segments
