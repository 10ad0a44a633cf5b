"""The data dir on disk: immutable index snapshots, a pointer to the live one, a writer lock.

Layout:
    CURRENT                 name of the live snapshot, replaced atomically (os.replace)
    snapshots/<name>/       one segment: kb.sqlite (articles, chunks), lexical/ and bridge/ (BM25
                            postings), dense.faiss, chunk_ids.npy; and manifest.json
    embeddings.sqlite       vector cache keyed by (model id, text hash): unchanged text is never re-encoded
    ingest.lock             held by the one writer at a time

A snapshot is its manifest's chain of segments, oldest first, ending with its own: a full
ingest writes a chain of one; a write of a few articles writes a small delta segment and
lists the older segments before it, with tombstones for the articles it replaced or deleted
(`Manifest.deleted`). Segments are never changed once written, so a delta costs time in
proportion to its articles, and a full ingest (or `kb compact`) folds the chain into one.
A writer builds beside the live snapshot and flips CURRENT last, so a crash at any point
leaves the previous snapshot live and readable; pruning keeps every segment that the live
snapshot or the one before it lists.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from .errors import IndexBusyError, IndexMismatchError, IndexMissingError

FORMAT_VERSION = 2
KEEP_SNAPSHOTS = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS articles (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    lang TEXT NOT NULL,
    tags TEXT NOT NULL,            -- JSON list
    source TEXT,
    meta TEXT NOT NULL,            -- JSON object: unknown front-matter keys
    body TEXT NOT NULL,            -- Markdown as ingested
    root_cause TEXT NOT NULL,
    fix TEXT NOT NULL,
    error_lines TEXT NOT NULL,     -- JSON list of the article's error lines
    templates TEXT NOT NULL,       -- JSON list: masked error lines, same order
    components TEXT NOT NULL,      -- JSON list of library components
    content_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,        -- row in the lexical and dense indexes
    article_id TEXT NOT NULL REFERENCES articles(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    heading_path TEXT NOT NULL,    -- JSON list
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    tokens TEXT NOT NULL,          -- space-joined lexical tokens
    bridge_tokens TEXT NOT NULL,   -- space-joined glossary terms in the other language
    embed_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_article ON chunks(article_id);
"""


@dataclass(frozen=True)
class SnapshotFiles:
    """The files of one snapshot: the one place their names are spelled (the writer is
    kb/build.py, the reader kb/search.py)."""

    root: Path

    @property
    def db(self) -> Path:
        """SQLite: articles and chunks (SCHEMA)."""
        return self.root / "kb.sqlite"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def lexical(self) -> Path:
        """BM25 postings (kb/lexical.py) of the chunks' own tokens."""
        return self.root / "lexical"

    @property
    def bridge(self) -> Path:
        """BM25 postings of the chunks' glossary terms in the other language."""
        return self.root / "bridge"

    @property
    def dense(self) -> Path:
        return self.root / "dense.faiss"

    @property
    def chunk_ids(self) -> Path:
        """The chunk id of each row of the lexical and dense indexes."""
        return self.root / "chunk_ids.npy"


@dataclass(frozen=True)
class Manifest:
    format_version: int
    model_id: str
    dim: int
    articles: int
    chunks: int
    created: float
    segments: tuple[str, ...] = ()
    """The snapshot's chain, oldest first; the last is the snapshot's own directory."""
    deleted: dict = field(default_factory=dict)
    """segment name -> ids of its articles that later segments replaced or deleted."""
    backend: str = "local"
    """Where the chain's vectors live (kb/vectors.py); every segment of a chain uses the same."""
    token_totals: dict = field(default_factory=dict)
    """"lexical"/"bridge" -> tokens in the live chunks: the average chunk length a delta's BM25
    document weights are normalised with, when they are written once (the qdrant backend)."""

    @classmethod
    def read(cls, path: Path) -> "Manifest":
        data = json.loads(path.read_text())
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        fields["segments"] = tuple(fields.get("segments", ()))
        return cls(**fields)

    def chain(self, snapshot: Path) -> list[Path]:
        """The segment directories the snapshot at `snapshot` reads, oldest first (a snapshot
        written before segments existed is its own only segment)."""
        return [snapshot.parent / name for name in self.segments] or [snapshot]

    def tombstoned(self, segment: Path) -> frozenset[str]:
        """Ids of the articles in this segment that later segments replaced or deleted."""
        return frozenset(self.deleted.get(segment.name, ()))

    def write(self, path: Path) -> None:
        data = {**self.__dict__, "segments": list(self.segments)}
        write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False).encode())


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DataDir:
    """Paths and the small protocols (lock, pointer flip, clean-up) of one data dir. With
    `shared` (kb/shared.py: KB_METADATA_URL), the pointer and the lock live in PostgreSQL for
    every replica, and the snapshots here are this replica's copies of the shared segments."""

    def __init__(self, root: Path, shared=None):
        self.root = Path(root)
        self.shared = shared

    @classmethod
    def of(cls, settings) -> "DataDir":
        """The data dir the settings name, joined to the shared database when KB_METADATA_URL is set."""
        if not settings.metadata_url:
            return cls(settings.data_dir)
        from .shared import SharedState

        return cls(settings.data_dir, SharedState(settings.metadata_url))

    @property
    def snapshots(self) -> Path:
        return self.root / "snapshots"

    @property
    def articles_dir(self) -> Path:
        """Where articles written through the API are kept as files (so they survive and re-ingest)."""
        return self.root / "articles"

    def segment_names(self) -> set[str]:
        """Every segment on disk or in the shared database, finished or being built (as the name
        it will be published under): what an index backend must keep."""
        names = self.shared.segment_names() if self.shared else set()
        if self.snapshots.exists():
            names |= {p.name.removeprefix(".building-") for p in self.snapshots.iterdir() if p.is_dir()}
        return names

    def current_name(self) -> str | None:
        if self.shared:
            return self.shared.live()[0]
        try:
            name = (self.root / "CURRENT").read_text().strip()
        except FileNotFoundError:
            return None
        return name or None

    def current(self) -> Path:
        name = self.current_name()
        if name and self.shared and not (self.snapshots / name).exists():
            self._fetch(name)
        if not name or not SnapshotFiles(self.snapshots / name).manifest.exists():
            raise IndexMissingError(
                f"no index in {self.root} yet: run `kb ingest corpus/` (or pass --data-dir / set KB_DATA_DIR)"
            )
        return self.snapshots / name

    def _fetch(self, name: str) -> None:
        """Copy a shared snapshot's segments here, the snapshot's own last (so its directory
        existing means its whole chain is here), then let go of copies no longer needed."""
        manifest = self.shared.manifest(name)
        if manifest is None:
            return  # pruned meanwhile: the caller's retry asks for the pointer again
        for segment in [s for s in manifest.get("segments") or [] if s != name] + [name]:
            self.shared.fetch(segment, self.snapshots)
        self._prune_old(keep=name)

    def new_snapshot_dir(self) -> Path:
        self.snapshots.mkdir(parents=True, exist_ok=True)
        name = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{time.monotonic_ns() % 10**9:09d}"
        path = self.snapshots / f".building-{name}"
        path.mkdir()
        return path

    def publish(self, building: Path) -> Path:
        """Make a finished snapshot live: rename into place, then flip CURRENT."""
        final = self.snapshots / building.name.removeprefix(".building-")
        for f in building.rglob("*"):
            if f.is_file():
                with open(f, "rb") as fh:
                    os.fsync(fh.fileno())
        os.replace(building, final)
        fsync_dir(self.snapshots)
        if self.shared:  # the shared pointer is the one replicas follow: flipped with the segment's rows
            try:
                self.shared.publish(final)
            except BaseException:
                shutil.rmtree(final, ignore_errors=True)  # never live anywhere: not a snapshot to keep
                raise
        write_atomic(self.root / "CURRENT", final.name.encode())
        self._prune_old(keep=final.name)
        return final

    def _prune_old(self, keep: str) -> None:
        """Keep the live snapshot and the one before it (readers may still have it open), and
        every segment either of them lists."""
        done = sorted(
            (p for p in self.snapshots.iterdir() if p.is_dir() and not p.name.startswith(".")),
            key=lambda p: p.name,
        )
        older = [p for p in done if p.name != keep]
        kept = [self.snapshots / keep, *older[max(0, len(older) - (KEEP_SNAPSHOTS - 1)):]]
        needed = {p.name for p in kept}
        for snapshot in kept:
            try:
                needed.update(Manifest.read(SnapshotFiles(snapshot).manifest).segments)
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a snapshot without a readable manifest keeps only itself
        for old in older:
            if old.name not in needed:
                shutil.rmtree(old, ignore_errors=True)
        for stale in self.snapshots.glob(".building-*"):
            if not _pid_alive(stale.name):
                shutil.rmtree(stale, ignore_errors=True)

    @contextmanager
    def writer_lock(self, wait: float | None = None, on_wait=None) -> Iterator[None]:
        """One writer per data dir (and, when shared, per database). Waits up to `wait` seconds
        (None: forever), then IndexBusyError."""
        if self.shared:
            with self._local_lock(wait, on_wait), self.shared.writer_lock(wait, on_wait):
                yield
        else:
            with self._local_lock(wait, on_wait):
                yield

    @contextmanager
    def _local_lock(self, wait: float | None, on_wait) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / "ingest.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = None if wait is None else time.monotonic() + wait
            told = False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if deadline is not None and time.monotonic() >= deadline:
                        raise IndexBusyError(
                            f"another writer is updating {self.root} (held by {_lock_holder(fd)}); try again when it is done"
                        ) from None
                    if on_wait and not told:
                        on_wait(f"waiting for another writer to finish with {self.root} ({_lock_holder(fd)})")
                        told = True
                    time.sleep(0.1)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
            yield
        finally:
            os.close(fd)


def _lock_holder(fd: int) -> str:
    try:
        return os.pread(fd, 64, 0).decode() or "unknown process"
    except OSError:
        return "unknown process"


def _pid_alive(building_name: str) -> bool:
    try:
        pid = int(building_name.split("-")[2])
        os.kill(pid, 0)
        return pid != os.getpid()
    except (IndexError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True


def connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.execute("PRAGMA foreign_keys = ON")
    conn.row_factory = sqlite3.Row
    return conn


def check_manifest(manifest: Manifest, model_id: str | None, where: Path) -> None:
    if manifest.format_version != FORMAT_VERSION:
        raise IndexMismatchError(
            f"the index in {where} has format version {manifest.format_version}, this kb reads version "
            f"{FORMAT_VERSION}: rebuild it with `kb ingest --rebuild PATH...`"
        )
    if model_id is not None and model_id != manifest.model_id:
        raise IndexMismatchError(
            f"the index in {where} was built with embedding model {manifest.model_id!r}, but {model_id!r} "
            f"was asked for: unset KB_EMBED_MODEL to use the index's model, or re-ingest with the new one "
            f"(`kb ingest --rebuild PATH...`)"
        )


class EmbeddingCache:
    """Vectors by (model id, text hash), so re-ingesting unchanged text costs no encoding."""

    def __init__(self, path: Path):
        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model_id TEXT, text_hash TEXT, vector BLOB, "
            "PRIMARY KEY (model_id, text_hash))"
        )

    def get_many(self, model_id: str, hashes: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(hashes), 500):
            part = hashes[i : i + 500]
            rows = self.conn.execute(
                f"SELECT text_hash, vector FROM vectors WHERE model_id = ? AND text_hash IN ({','.join('?' * len(part))})",
                [model_id, *part],
            )
            for h, blob in rows:
                found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def have(self, model_id: str, hashes: list[str]) -> set[str]:
        """Which of these hashes have a vector (without reading the vectors)."""
        found: set[str] = set()
        for i in range(0, len(hashes), 500):
            part = hashes[i : i + 500]
            found.update(h for (h,) in self.conn.execute(
                f"SELECT text_hash FROM vectors WHERE model_id = ? AND text_hash IN ({','.join('?' * len(part))})",
                [model_id, *part]))
        return found

    def put_many(self, model_id: str, items: dict[str, np.ndarray]) -> None:
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(model_id, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()],
            )

    def close(self) -> None:
        self.conn.close()
