"""`KnowledgeBase`: the one object every front door (CLI, HTTP API, bots) talks to.

It follows the data dir's live snapshot: after any writer publishes a new one, the
next call opens it, while calls already running finish on the old one.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from .build import IngestReport, Progress, Writer
from .config import Settings
from .embed import load_encoder, use_threads
from .errors import IndexMissingError, NotFoundError
from .glossary import Glossary, load_glossary
from .ingest import parse_document, valid_article_id
from .results import SearchResponse
from .search import Searcher
from .store import DataDir, Manifest, SnapshotFiles, check_manifest
from .text import clean
from .tokenize import Tokenizer


class KnowledgeBase:
    def __init__(self, settings: Settings | None = None, tokenizer: Tokenizer | None = None,
                 glossary: Glossary | None = None):
        self.settings = settings or Settings.from_env()
        use_threads(self.settings.threads)
        self.data = DataDir(self.settings.data_dir)
        self.tokenizer = tokenizer or Tokenizer()
        self._glossary = glossary
        self._searcher: Searcher | None = None
        self._lock = threading.Lock()

    @property
    def glossary(self) -> Glossary:
        if self._glossary is None:
            self._glossary = load_glossary()
        return self._glossary

    # -- reading ----------------------------------------------------------

    def searcher(self) -> Searcher:
        """The live snapshot's searcher, reopened when CURRENT points elsewhere."""
        snapshot = self.data.current()
        current = self._searcher
        if current is not None and current.path == snapshot:
            return current
        with self._lock:
            for _ in range(5):
                if self._searcher is not None and self._searcher.path == snapshot:
                    break
                try:
                    self._searcher = self._open(snapshot)
                    break
                except Exception:
                    # Writers keep the live snapshot and the one before it; if two publishes
                    # happened while this one was opening, it was pruned under us: open the
                    # newest instead. A snapshot that is still current failing is a real error.
                    newer = self.data.current()
                    if newer == snapshot:
                        raise
                    snapshot = newer
            else:
                self._searcher = self._open(snapshot)
            return self._searcher

    def _open(self, snapshot: Path) -> Searcher:
        manifest = Manifest.read(SnapshotFiles(snapshot).manifest)
        asked = self.settings.embed_model
        if asked:
            check_manifest(manifest, load_encoder(asked).model_id, snapshot)
        else:
            check_manifest(manifest, None, snapshot)
        encoder = load_encoder(asked or manifest.model_id)
        return Searcher(snapshot, encoder, self.tokenizer, self.glossary, self.settings.ranking)

    def warm(self) -> None:
        """Load the index, the model and the segmenter now rather than on the first query."""
        s = self.searcher()
        s.search("CUDA out of memory 显存不足", top_k=1)

    def search(self, query: str, top_k: int = 5, exclude: frozenset[str] = frozenset()) -> SearchResponse:
        """`exclude`: article ids to leave out, as if the corpus lacked them (evaluation)."""
        import time

        started = time.perf_counter()
        response = self.searcher().search(query, top_k=top_k, exclude=exclude)
        response.took_ms = (time.perf_counter() - started) * 1000
        return response

    def get_article(self, article_id: str) -> dict:
        if not valid_article_id(article_id):
            raise NotFoundError(f"no article with id {article_id!r}")
        return self.searcher().get_article(article_id)

    def stats(self) -> dict:
        return self.searcher().stats()

    # -- writing ----------------------------------------------------------

    def writer(self, progress: Progress | None = None) -> Writer:
        return Writer(self.settings, tokenizer=self.tokenizer, glossary=self.glossary, progress=progress)

    def ingest(self, paths: list[Path], *, prune: bool = False, rebuild: bool = False,
               progress: Progress | None = None, wait: float | None = None, on_wait=None) -> IngestReport:
        return self.writer(progress).ingest(paths, prune=prune, rebuild=rebuild, wait=wait, on_wait=on_wait)

    def add_article(self, text: str, fmt: str = "md") -> tuple[str, bool]:
        """Index an article sent through the API; returns (article id, created).

        It is kept as a file in the data dir, written atomically under the writer lock
        before the new snapshot is published, so it survives a restart and a later
        `kb ingest --prune` keeps it.
        """
        raw = clean(text).encode("utf-8")
        doc = parse_document(raw, f"api-article.{fmt}", default_id="")  # errors name the request, not a file
        doc = replace(doc, path=str(self.data.articles_dir / f"{doc.id}.{fmt}"))
        existed = self._exists(doc.id)
        self.writer().upsert(doc, file_bytes=raw)
        return doc.id, not existed

    def delete_article(self, article_id: str) -> None:
        if not valid_article_id(article_id) or not self._exists(article_id):
            raise NotFoundError(f"no article with id {article_id!r}")
        self.writer().delete(article_id)

    def _exists(self, article_id: str) -> bool:
        try:
            return article_id in self.searcher().index_of
        except IndexMissingError:
            return False  # the first article of a new knowledge base
