"""`KnowledgeBase`: the one object every front door (CLI, HTTP API, bots) talks to.

It follows the data dir's live snapshot: after any writer publishes a new one, the
next call opens it, while calls already running finish on the old one.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

from .build import IngestReport, Progress, Writer
from .config import Settings
from .embed import load_encoder, use_threads
from .errors import IndexMissingError, KbError, NotFoundError
from .glossary import Glossary, load_glossary
from .ingest import parse_document, valid_article_id
from .loop import Gap, SearchLog, add_error_line, draft_text
from .results import SearchResponse
from .search import Searcher
from .segment import SegmentCache
from .store import DataDir, Manifest, SnapshotFiles, check_manifest
from .text import clean
from .tokenize import Tokenizer
from .verdict import ConfidenceModel
from .vectors import open_backend


logger = logging.getLogger("kb")

class KnowledgeBase:
    def __init__(self, settings: Settings | None = None, tokenizer: Tokenizer | None = None,
                 glossary: Glossary | None = None, confidence: ConfidenceModel | None = None):
        """`confidence`: the model behind the verdict, if not the shipped one (fitting a new one
        needs searches before any model fits the code's evidence)."""
        self.settings = settings or Settings.from_env()
        self._confidence = confidence
        use_threads(self.settings.threads)
        self.data = DataDir.of(self.settings)
        self.tokenizer = tokenizer or Tokenizer()
        self._glossary = glossary
        self._searcher: Searcher | None = None
        self._segments = SegmentCache()  # a write's new snapshot reopens only its new segment
        self._log: SearchLog | None = None
        self._log_failed = False
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
        return Searcher(snapshot, encoder, self.tokenizer, self.glossary, self.settings.ranking, model=self._confidence,
                        segments=self._segments, backend=open_backend(self.settings, manifest.backend))

    def warm(self) -> None:
        """Load the index, the model and the segmenter now rather than on the first query."""
        s = self.searcher()
        s.search("CUDA out of memory 显存不足", top_k=1)

    def search(self, query: str, top_k: int = 5, exclude: frozenset[str] = frozenset(),
               door: str | None = None, client: str | None = None) -> SearchResponse:
        """`exclude`: article ids to leave out, as if the corpus lacked them (evaluation).
        `door` (api, web, cli, slack, …): a user's search, recorded masked for `gaps` unless
        recording is off; `client` identifies the asker for counting distinct users (hashed)."""
        import time

        started = time.perf_counter()
        response = self.searcher().search(query, top_k=top_k, exclude=exclude)
        response.took_ms = (time.perf_counter() - started) * 1000
        if door and self.settings.record_searches and not self._log_failed:
            try:
                response.search_id = self.log.record(query, response, door, client)
            except (sqlite3.Error, OSError) as exc:  # a read-only or full data dir must not cost the answer
                logger.warning("kb: searches are not being recorded for `kb gaps` (%s): %s", self.settings.data_dir, exc)
                self._log_failed = True  # say it once; answers go on
        return response

    def get_article(self, article_id: str) -> dict:
        if not valid_article_id(article_id):
            raise NotFoundError(f"no article with id {article_id!r}")
        return self.searcher().get_article(article_id)

    def stats(self) -> dict:
        return self.searcher().stats()

    # -- the knowledge loop (kb/loop.py) ------------------------------------

    @property
    def log(self) -> SearchLog:
        with self._lock:
            if self._log is None:
                self._log = SearchLog(self.settings.data_dir)
            return self._log

    def feedback(self, search_id: str, article_id: str, helpful: bool, comment: str | None = None,
                 client: str | None = None) -> None:
        if not valid_article_id(article_id):
            raise NotFoundError(f"no article with id {article_id!r}")
        self.log.feedback(search_id, article_id, helpful, comment, client)

    def vote_token(self, search_id: str, article_id: str, helpful: bool) -> str:
        return self.log.vote_token(search_id, article_id, helpful)

    def vote(self, search_id: str, article_id: str, helpful: bool, token: str, client: str | None = None) -> None:
        self.log.vote(search_id, article_id, helpful, token, client)

    def gaps(self, since: float | None = None, include_linked: bool = False, limit: int = 100) -> list[Gap]:
        return self.log.gaps(since=since, include_linked=include_linked, limit=limit)

    def link_gap(self, gap_id: str, article_id: str) -> str:
        """Answer a gap with an article: its masked line joins the article's `error_lines` front
        matter (in the article's own file, so it survives a re-ingest and shows in review), and
        the article is re-indexed. Returns the file that changed."""
        gap = self.log.gap(gap_id)
        path = Path(self.get_article(article_id)["path"])
        if path.suffix == ".txt":
            raise KbError(f"{path} is a scraped page without front matter: convert it to .md to link errors to it")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise KbError(f"cannot read {path} ({exc.strerror}): link from the machine that holds the corpus") from None
        try:
            new = add_error_line(text, gap.example)
        except KbError as exc:
            raise KbError(f"{path}: {exc}") from None
        if new != text:
            raw = new.encode("utf-8")
            self.writer().upsert(parse_document(raw, str(path)), file_bytes=raw)
        self.log.mark_linked(gap_id, article_id)
        return str(path)

    def draft_gap(self, gap_id: str, folder: Path) -> Path:
        """A new article skeleton for a gap, in `folder` (marked `draft: true`: not indexed until written)."""
        gap = self.log.gap(gap_id)
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"gap-{gap.gap_id}.md"
        if path.exists():
            raise KbError(f"{path} already exists: edit it, or delete it to draft again")
        path.write_text(draft_text(gap), encoding="utf-8")
        return path

    # -- writing ----------------------------------------------------------

    def writer(self, progress: Progress | None = None) -> Writer:
        return Writer(self.settings, tokenizer=self.tokenizer, glossary=self.glossary, progress=progress, data=self.data)

    def ingest(self, paths: list[Path], *, prune: bool = False, rebuild: bool = False,
               progress: Progress | None = None, wait: float | None = None, on_wait=None) -> IngestReport:
        return self.writer(progress).ingest(paths, prune=prune, rebuild=rebuild, wait=wait, on_wait=on_wait)

    def compact(self, progress: Progress | None = None, wait: float | None = None, on_wait=None) -> IngestReport:
        """Fold the delta segments of single-article writes into one (ranking unchanged)."""
        return self.writer(progress).compact(wait=wait, on_wait=on_wait)

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
