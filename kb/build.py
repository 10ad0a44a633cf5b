"""Write path: ingest files, add or delete one article, fold the index into one segment.

Every write takes the data dir's lock, builds a new snapshot beside the live one and
publishes it last (see `store`). A write of a few articles builds only a delta segment
for them (tombstoning what they replace), so it costs time in proportion to those
articles; a large batch, `--rebuild`, a long chain or `compact()` builds one segment over
every live article. Unchanged files cost nothing; unchanged chunk text is never re-encoded.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .articles import PreparedArticle, embed_text, prepare_article
from .config import Settings
from .embed import Encoder, load_encoder
from .errors import ArticleError, IndexMissingError
from .glossary import Glossary, load_glossary
from .ingest import Document, find_article_files, load_document
from .lexical import PostingsBuilder
from .store import (
    FORMAT_VERSION,
    SCHEMA,
    DataDir,
    EmbeddingCache,
    Manifest,
    SnapshotFiles,
    check_manifest,
    connect,
    write_atomic,
)
from .tokenize import Tokenizer
from .vectors import open_backend

logger = logging.getLogger("kb")

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): stages are 'read', 'parse', 'encode', 'index'."""

ENCODE_BATCH = 32
VECTOR_BATCH = 4096
DELTA_MAX_ARTICLES = 64
"""A write of more articles than this (and than a tenth of the index) builds one whole segment instead of a delta."""
MAX_SEGMENTS = 16
"""A chain this long is folded into one segment by the next write: each segment costs a little per query."""


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    failed: list[ArticleError] = field(default_factory=list)
    encoded_chunks: int = 0
    snapshot: str | None = None
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def as_dict(self) -> dict:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "failed": [{"path": e.path, "line": e.line, "reason": e.reason} for e in self.failed],
            "encoded_chunks": self.encoded_chunks,
            "snapshot": self.snapshot,
            "seconds": round(self.seconds, 3),
        }


def _noop(stage: str, done: int, total: int) -> None:
    pass


class Writer:
    """Applies a batch of upserts and deletes to the live snapshot, producing a new one."""

    def __init__(self, settings: Settings, tokenizer: Tokenizer | None = None, glossary: Glossary | None = None,
                 progress: Progress | None = None, data: DataDir | None = None):
        self.settings = settings
        self.data = data or DataDir.of(settings)
        self.tokenizer = tokenizer or Tokenizer()
        self.glossary = glossary or load_glossary()
        self.progress = progress or _noop

    # -- public operations -------------------------------------------------

    def ingest(self, paths: list[Path], *, prune: bool = False, rebuild: bool = False, wait: float | None = None, on_wait=None) -> IngestReport:
        started = time.monotonic()
        report = IngestReport()
        files = list(find_article_files(paths))
        docs: list[Document] = []
        for i, f in enumerate(files):
            try:
                docs.append(load_document(f))
            except ArticleError as exc:
                report.failed.append(exc)
            self.progress("read", i + 1, len(files))
        with self.data.writer_lock(wait=wait, on_wait=on_wait):
            self._apply(docs, deletes=[], prune=prune, rebuild=rebuild, report=report)
        report.seconds = time.monotonic() - started
        return report

    def upsert(self, doc: Document, file_bytes: bytes | None = None, wait: float | None = 30.0) -> IngestReport:
        """Index one document; with `file_bytes`, first write them to `doc.path` (API-added articles)."""
        report = IngestReport()
        try:  # render it completely before anything touches the disk: a bad article leaves no file
            prepare_article(doc, self.tokenizer, self.glossary)
        except ArticleError:
            raise
        except Exception as exc:
            raise ArticleError(doc.path, f"could not be indexed ({type(exc).__name__}: {exc})") from None
        with self.data.writer_lock(wait=wait):
            path = Path(doc.path)
            previous = path.read_bytes() if file_bytes is not None and path.exists() else None
            if file_bytes is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, file_bytes)
            try:
                self._apply([doc], deletes=[], prune=False, rebuild=False, report=report, replace_any_path=True)
                if report.failed:
                    raise report.failed[0]
            except BaseException:
                if file_bytes is not None:  # the index did not take it: neither does the folder
                    if previous is None:
                        path.unlink(missing_ok=True)
                    else:
                        write_atomic(path, previous)
                raise
        return report

    def delete(self, article_id: str, wait: float | None = 30.0) -> IngestReport:
        """Remove an article from the index; an API-added article's file goes with it."""
        report = IngestReport()
        with self.data.writer_lock(wait=wait):
            self._apply([], deletes=[article_id], prune=False, rebuild=False, report=report)
            own = self.data.articles_dir
            for f in own.glob(f"{article_id}.*") if own.exists() else ():
                if f.stem == article_id:
                    f.unlink(missing_ok=True)
        return report

    def compact(self, wait: float | None = None, on_wait=None) -> IngestReport:
        """Fold the live snapshot's delta segments into one segment (same articles, same ranking)."""
        started = time.monotonic()
        report = IngestReport()
        with self.data.writer_lock(wait=wait, on_wait=on_wait):
            self._apply([], deletes=[], prune=False, rebuild=False, report=report, compact=True)
        report.seconds = time.monotonic() - started
        return report

    # -- the one write path -------------------------------------------------

    def _apply(self, docs: list[Document], deletes: list[str], prune: bool, rebuild: bool,
               report: IngestReport, replace_any_path: bool = False, compact: bool = False) -> None:
        """`docs` is consumed: emptied once its documents are in the new segment's database."""
        try:
            live: Path | None = self.data.current()
        except IndexMissingError:
            live = None
        manifest = Manifest.read(SnapshotFiles(live).manifest) if live else None
        if manifest and not rebuild:
            check_manifest(manifest, self._asked_model_id(), live)
        encoder = load_encoder(self.settings.embed_model or (manifest.model_id if manifest and not rebuild else None))
        chain = manifest.chain(live) if live else []

        # Only a prune needs every live article; otherwise the ones this write names will do.
        wanted = None if prune else {*(d.id for d in docs), *deletes}
        old = _read_article_index(chain, manifest, wanted) if live else {}
        upserts: dict[str, Document] = {}
        seen_paths: dict[str, str] = {}
        for doc in docs:
            if doc.id in seen_paths:
                report.failed.append(ArticleError(doc.path, f"id {doc.id!r} is already used by {seen_paths[doc.id]}; give one of them another id", 2))
                continue
            prior = old.get(doc.id)
            if prior and prior[0] != doc.path and Path(prior[0]).exists() and not replace_any_path:
                report.failed.append(ArticleError(doc.path, f"id {doc.id!r} is already used by {prior[0]}; give one of them another id", 2))
                continue
            seen_paths[doc.id] = doc.path
            if prior and prior[1] == doc.content_hash and prior[0] == doc.path and not rebuild:
                report.unchanged += 1
                continue
            upserts[doc.id] = doc
            (report.updated if prior else report.added).append(doc.id)
        removed = [a for a in deletes if a in old]
        if prune:
            removed += [a for a, (path, *_) in old.items() if a not in upserts and not Path(path).exists() and a not in removed]
        report.removed = removed
        # Vectors stay where the index keeps them, unless the settings name another backend:
        # then the index moves there whole.
        wanted = self.settings.index_backend or (manifest.backend if manifest else "local")
        moving = manifest is not None and manifest.backend != wanted
        if live and not report.changed and not rebuild and not moving and not (compact and len(chain) > 1):
            return
        backend = open_backend(self.settings, wanted)
        changes = len(upserts) + len(removed)
        whole = (rebuild or compact or moving or live is None or len(chain) >= MAX_SEGMENTS
                 or changes > max(DELTA_MAX_ARTICLES, manifest.articles // 10))

        if rebuild and chain:  # every article is prepared again (e.g. for another model)
            upserts = {**_documents_from(chain, manifest), **upserts}
            for a in removed:
                upserts.pop(a, None)
        building = self.data.new_snapshot_dir()
        try:
            conn = connect(SnapshotFiles(building).db)
            conn.executescript(SCHEMA)
            kept = self._prepare_into(conn, upserts, report)  # an upsert that failed leaves its old version live
            # They are in the database now: let the documents go before the indexes are built (at
            # 100k articles their text is ~1.4 GB, which would sit beside the vectors being indexed).
            upserts.clear()
            docs.clear()
            if whole:  # one segment over every live article: the chain's rows copied, the upserts added
                segments, deleted, before = (), {}, (0, 0, {})
                if chain and not rebuild:
                    _copy_live_rows(conn, chain, manifest, skip={*removed, *kept})
            else:  # a delta: only the upserts; the chain's copies of what they replace are tombstoned
                segments = tuple(p.name for p in chain)
                deleted = {name: list(ids) for name, ids in manifest.deleted.items()}
                gone = [a for a in [*removed, *kept] if a in old]
                for a in gone:
                    deleted.setdefault(old[a][2], []).append(a)
                # the chain's live counts, less what this write tombstones
                chunks, tokens = _chunk_totals(self.data, gone, old)
                before = (manifest.articles - len(gone), manifest.chunks - chunks,
                          {f: manifest.token_totals[f] - tokens[f] for f in manifest.token_totals})
            own = building.name.removeprefix(".building-")
            report.encoded_chunks = self._build_indexes(conn, building, encoder, backend, (*segments, own), deleted, before)
            conn.close()
            report.snapshot = self.data.publish(building).name
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)  # never leave a half-built snapshot behind
            raise
        try:  # published: what is left is clean-up, which the next write retries
            backend.prune(keep=self.data.segment_names())
        except Exception as exc:
            logger.warning("kb: old %s collections were not dropped (the next write retries): %s", backend.name, exc)

    def _prepare_into(self, conn: sqlite3.Connection, upserts: dict[str, Document], report: IngestReport) -> set[str]:
        """Parse, tokenize and insert each upsert, one at a time (a big batch is never all in
        memory); one that fails is reported and left out, not fatal. Returns the ids inserted."""
        kept = set()
        docs = list(upserts.values())
        with conn:
            for i, d in enumerate(docs):
                try:
                    prepared = prepare_article(d, self.tokenizer, self.glossary)
                except Exception as exc:  # one unparseable article must not sink the batch
                    report.failed.append(ArticleError(d.path, f"could not be indexed ({type(exc).__name__}: {exc})"))
                    for done in (report.added, report.updated):
                        if d.id in done:
                            done.remove(d.id)
                else:
                    _insert(conn, prepared)
                    kept.add(d.id)
                self.progress("parse", i + 1, len(docs))
        return kept

    def _encode_missing(self, conn: sqlite3.Connection, encoder: Encoder, cache: EmbeddingCache, hashes: list[str]) -> int:
        """Encode the chunks whose text the cache has no vector for, into the cache; how many."""
        have = cache.have(encoder.model_id, list(set(hashes)))
        missing: dict[str, str] = {}
        if len(have) < len(set(hashes)):
            for h, title, heading_path, text in conn.execute(
                    "SELECT embed_hash, (SELECT title FROM articles a WHERE a.id = article_id), heading_path, text "
                    "FROM chunks ORDER BY id"):
                if h not in have and h not in missing:
                    missing[h] = embed_text(title, json.loads(heading_path), text)
        todo = list(missing.items())
        del missing
        for start in range(0, len(todo), ENCODE_BATCH):
            batch = todo[start : start + ENCODE_BATCH]
            vecs = encoder.encode([t for _, t in batch], batch_size=ENCODE_BATCH)
            cache.put_many(encoder.model_id, {h: v for (h, _), v in zip(batch, vecs)})
            self.progress("encode", min(start + ENCODE_BATCH, len(todo)), len(todo))
        return len(todo)

    def _asked_model_id(self) -> str | None:
        return load_encoder(self.settings.embed_model).model_id if self.settings.embed_model else None

    def _build_indexes(self, conn: sqlite3.Connection, building: Path, encoder: Encoder, backend,
                       segments: tuple[str, ...], deleted: dict, before: tuple[int, int, dict]) -> int:
        """This segment's indexes over its own chunks, and the snapshot's manifest (`before`:
        live articles, chunks and tokens per field in the segments before this one)."""
        ids, hashes = array("q"), []
        for chunk_id, embed_hash in conn.execute("SELECT id, embed_hash FROM chunks ORDER BY id"):
            ids.append(chunk_id)
            hashes.append(embed_hash)

        cache = EmbeddingCache(self.settings.data_dir / "embeddings.sqlite")
        try:
            encoded = self._encode_missing(conn, encoder, cache, hashes)
            self.progress("index", 0, 1)
            n_rows = len(hashes)
            dim = encoder.dim or (len(cache.get_many(encoder.model_id, hashes[:1]).popitem()[1]) if hashes else 0)
            if not dim:
                dim = encoder.encode(["dimension probe"], query=True).shape[1]
            files = SnapshotFiles(building)
            np.save(files.chunk_ids, np.frombuffer(ids, dtype=np.int64) if n_rows else np.zeros(0, np.int64))
            # BM25 postings stay in the segment in every backend: kb's own df (and the local scores).
            own = {field: _write_postings(conn, column, path)
                   for field, column, path in (("lexical", "tokens", files.lexical), ("bridge", "bridge_tokens", files.bridge))}
            if len(segments) == 1:
                totals, live_rows = own, n_rows
            elif before[2]:  # a delta: the chain's tokens before it (tombstoned ones taken out) and its own
                totals, live_rows = {f: own[f] + before[2][f] for f in own}, before[1] + n_rows
            else:  # a delta on an index written before kb counted them: unknown (only qdrant needs them)
                totals, live_rows = {}, n_rows
            avgdl = {f: max((totals or own)[f] / max(1, live_rows), 1e-9) for f in own}

            def vectors():
                """The rows' vectors in order, a batch at a time from the cache: a 100k-article
                segment never holds its vectors twice (they are ~1.5 KB a chunk)."""
                for start in range(0, n_rows, VECTOR_BATCH):
                    part = hashes[start : start + VECTOR_BATCH]
                    found = cache.get_many(encoder.model_id, list(set(part)))
                    yield np.stack([found[h] for h in part]).astype(np.float32, copy=False)

            rows = conn.execute("SELECT id, article_id, tokens, bridge_tokens FROM chunks ORDER BY id")
            backend.write(segments[-1], files, rows, vectors(), n_rows, int(dim), avgdl)
        finally:
            cache.close()

        n_articles = before[0] + conn.execute("SELECT COUNT(*) FROM articles").fetchone()[0]
        Manifest(FORMAT_VERSION, encoder.model_id, int(dim), n_articles, before[1] + n_rows, time.time(),
                 segments=segments, deleted=deleted, backend=backend.name, token_totals=totals).write(files.manifest)
        self.progress("index", 1, 1)
        return encoded


def _write_postings(conn: sqlite3.Connection, column: str, path: Path) -> int:
    """One token field's postings, streamed from the database into compact arrays (one field at
    a time: at 100k articles each holds ~45M (token, chunk) pairs); its total token count."""
    builder = PostingsBuilder()
    for (tokens,) in conn.execute(f"SELECT {column} FROM chunks ORDER BY id"):
        builder.add(tokens.split())
    postings = builder.build()
    del builder
    postings.save(path)
    return int(postings.doc_len.sum())


def _live_rows(chain: list[Path], manifest: Manifest, sql: str, ids: set[str] | None = None):
    """(segment name, row) for each live article row of a chain (or of these `ids`): tombstoned
    copies left out."""
    wanted = sorted(ids) if ids is not None else None
    for segment in chain:
        dead = manifest.tombstoned(segment)
        conn = connect(SnapshotFiles(segment).db, readonly=True)
        try:
            if wanted is None:
                rows = conn.execute(sql)
            else:
                rows = (r for i in range(0, len(wanted), 500) for r in conn.execute(
                    f"{sql} WHERE id IN ({','.join('?' * len(wanted[i:i + 500]))})", wanted[i:i + 500]))
            for r in rows:
                if r["id"] not in dead:
                    yield segment.name, r
        finally:
            conn.close()


def _read_article_index(chain: list[Path], manifest: Manifest, ids: set[str] | None = None
                        ) -> dict[str, tuple[str, str, str]]:
    """id -> (path, content hash, name of the segment holding it) of every live article (or of `ids`)."""
    return {r["id"]: (r["path"], r["content_hash"], name)
            for name, r in _live_rows(chain, manifest, "SELECT id, path, content_hash FROM articles", ids)}


def _chunk_totals(data: DataDir, ids: list[str], where: dict[str, tuple[str, str, str]]) -> tuple[int, dict[str, int]]:
    """How many chunks these live articles have, and their tokens per field, each counted in the
    segment `where` says holds it."""
    chunks, tokens = 0, {"lexical": 0, "bridge": 0}
    words = "CASE WHEN {0} = '' THEN 0 ELSE length({0}) - length(replace({0}, ' ', '')) + 1 END"
    for name in {where[a][2] for a in ids}:
        mine = [a for a in ids if where[a][2] == name]
        conn = connect(SnapshotFiles(data.snapshots / name).db, readonly=True)
        try:
            for i in range(0, len(mine), 500):
                part = mine[i : i + 500]
                n, lex, bri = conn.execute(
                    f"SELECT COUNT(*), TOTAL({words.format('tokens')}), TOTAL({words.format('bridge_tokens')}) "
                    f"FROM chunks WHERE article_id IN ({','.join('?' * len(part))})", part).fetchone()
                chunks, tokens["lexical"], tokens["bridge"] = chunks + n, tokens["lexical"] + int(lex), tokens["bridge"] + int(bri)
        finally:
            conn.close()
    return chunks, tokens


def _copy_live_rows(conn: sqlite3.Connection, chain: list[Path], manifest: Manifest, skip: set[str]) -> None:
    """Copy the chain's live articles and their chunks into a new segment's database, except `skip`."""
    conn.execute("CREATE TEMP TABLE skip (id TEXT PRIMARY KEY)")
    for segment in chain:
        gone = skip | manifest.tombstoned(segment)
        with conn:
            conn.execute("DELETE FROM temp.skip")
            conn.executemany("INSERT INTO temp.skip VALUES (?)", [(a,) for a in gone])
        conn.execute("ATTACH DATABASE ? AS seg", (str(SnapshotFiles(segment).db),))
        try:
            with conn:
                conn.execute("INSERT INTO main.articles SELECT * FROM seg.articles WHERE id NOT IN (SELECT id FROM temp.skip)")
                conn.execute(
                    "INSERT INTO main.chunks (article_id, ordinal, heading_path, kind, text, tokens, bridge_tokens, embed_hash) "
                    "SELECT article_id, ordinal, heading_path, kind, text, tokens, bridge_tokens, embed_hash FROM seg.chunks "
                    "WHERE article_id NOT IN (SELECT id FROM temp.skip) ORDER BY id")
        finally:
            conn.execute("DETACH DATABASE seg")
    conn.execute("DROP TABLE temp.skip")


def _documents_from(chain: list[Path], manifest: Manifest) -> dict[str, Document]:
    """Rebuild Documents from a snapshot, for `--rebuild` (e.g. after changing the model)."""
    return {
        r["id"]: Document(
            id=r["id"], title=r["title"], lang=r["lang"], tags=tuple(json.loads(r["tags"])),
            source=r["source"], body=r["body"], path=r["path"], content_hash=r["content_hash"],
            meta=json.loads(r["meta"]),
        )
        for _, r in _live_rows(chain, manifest, "SELECT * FROM articles")
    }


def _insert(conn: sqlite3.Connection, p: PreparedArticle) -> None:
    d = p.doc
    conn.execute(
        "INSERT INTO articles (id, path, title, lang, tags, source, meta, body, root_cause, fix, error_lines, templates, components, content_hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            d.id, d.path, d.title, d.lang, json.dumps(list(d.tags), ensure_ascii=False), d.source,
            json.dumps(d.meta, ensure_ascii=False), d.body, p.root_cause, p.fix,
            json.dumps(list(p.error_lines), ensure_ascii=False), json.dumps(list(p.templates), ensure_ascii=False),
            json.dumps(list(p.components)), d.content_hash,
        ),
    )
    conn.executemany(
        "INSERT INTO chunks (article_id, ordinal, heading_path, kind, text, tokens, bridge_tokens, embed_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (d.id, c.chunk.ordinal, json.dumps(list(c.chunk.heading_path), ensure_ascii=False), c.chunk.kind,
             c.chunk.text, _join(c.tokens), _join(c.bridge_tokens), c.embed_hash)
            for c in p.chunks
        ],
    )


def _join(tokens) -> str:
    return " ".join(t.replace(" ", "_") for t in tokens)
