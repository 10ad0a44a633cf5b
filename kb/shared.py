"""Shared state for several API replicas in PostgreSQL (`KB_METADATA_URL`).

Without it, a knowledge base is its data dir (kb/store.py). With it, PostgreSQL holds what
replicas must agree on, and each replica's data dir becomes a cache:
- every segment's articles and chunks as rows (`kb_articles`, `kb_chunks`), its manifest, and
  its BM25 postings and vector files as blobs (`kb_segment_files`);
- the pointer to the live snapshot and the one before it (`kb_live`), flipped in the same
  transaction that adds the new segment, so replicas see a write whole or not at all;
- the writer lock: a PostgreSQL advisory lock, so one writer at a time across all replicas.

A replica reads the pointer on each request; a segment it has not seen is copied into its
data dir once (segments never change) and then read from local files at full speed.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import IndexBusyError, KbError

LOCK_KEY = 0x6B62_7772  # "kbwr": the advisory lock every writer of this database takes
SCHEMA = """
CREATE TABLE IF NOT EXISTS kb_segments (
    name TEXT PRIMARY KEY,
    manifest TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS kb_segment_files (
    segment TEXT NOT NULL REFERENCES kb_segments(name) ON DELETE CASCADE,
    path TEXT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (segment, path)
);
CREATE TABLE IF NOT EXISTS kb_articles (
    segment TEXT NOT NULL REFERENCES kb_segments(name) ON DELETE CASCADE,
    id TEXT NOT NULL, path TEXT NOT NULL, title TEXT NOT NULL, lang TEXT NOT NULL, tags TEXT NOT NULL,
    source TEXT, meta TEXT NOT NULL, body TEXT NOT NULL, root_cause TEXT NOT NULL, fix TEXT NOT NULL,
    error_lines TEXT NOT NULL, templates TEXT NOT NULL, components TEXT NOT NULL, content_hash TEXT NOT NULL,
    PRIMARY KEY (segment, id)
);
CREATE TABLE IF NOT EXISTS kb_chunks (
    segment TEXT NOT NULL REFERENCES kb_segments(name) ON DELETE CASCADE,
    id BIGINT NOT NULL, article_id TEXT NOT NULL, ordinal INTEGER NOT NULL, heading_path TEXT NOT NULL,
    kind TEXT NOT NULL, text TEXT NOT NULL, tokens TEXT NOT NULL, bridge_tokens TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    PRIMARY KEY (segment, id)
);
CREATE TABLE IF NOT EXISTS kb_live (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    name TEXT NOT NULL,
    previous TEXT
);
"""
ARTICLE_COLUMNS = ("id", "path", "title", "lang", "tags", "source", "meta", "body", "root_cause", "fix",
                   "error_lines", "templates", "components", "content_hash")
CHUNK_COLUMNS = ("id", "article_id", "ordinal", "heading_path", "kind", "text", "tokens", "bridge_tokens", "embed_hash")
ROWS_PER_BATCH = 500


def connection_url(url: str) -> str:
    """A libpq URL from a SQLAlchemy-style one (`postgresql+psycopg://…` works too)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+")[0] not in ("postgresql", "postgres"):
        raise KbError(f"KB_METADATA_URL must be a PostgreSQL URL (postgresql://user:password@host/db), not {scheme!r}")
    return f"postgresql://{rest}"


class SharedState:
    """The knowledge base's state in one PostgreSQL database."""

    def __init__(self, url: str):
        try:
            import psycopg
        except ImportError:
            raise KbError("KB_METADATA_URL needs psycopg: pip install 'kb[scale]'") from None
        self._psycopg = psycopg
        self.url = connection_url(url)
        self._reader = None
        self._reader_lock = threading.Lock()
        with self.connect() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY + 1,))  # replicas starting together
            for statement in filter(str.strip, SCHEMA.split(";")):
                conn.execute(statement)

    def connect(self):
        try:
            return self._psycopg.connect(self.url, connect_timeout=10)
        except self._psycopg.OperationalError as exc:
            raise KbError(f"cannot reach the metadata database in KB_METADATA_URL: {str(exc).strip()}") from None

    # -- the pointer ------------------------------------------------------

    def live(self) -> tuple[str | None, str | None]:
        """(live snapshot, the one before it), asked on every request: one short query on a kept connection."""
        with self._reader_lock:
            for attempt in (1, 2):
                try:
                    if self._reader is None or self._reader.closed:
                        self._reader = self.connect()
                        self._reader.autocommit = True
                    row = self._reader.execute("SELECT name, previous FROM kb_live").fetchone()
                    return (row[0], row[1]) if row else (None, None)
                except self._psycopg.OperationalError:
                    self._reader = None  # the server restarted or dropped us: one fresh try
                    if attempt == 2:
                        raise

    def manifest(self, name: str) -> dict | None:
        with self.connect() as conn:
            row = conn.execute("SELECT manifest FROM kb_segments WHERE name = %s", (name,)).fetchone()
        return json.loads(row[0]) if row else None

    def segment_names(self) -> set[str]:
        with self.connect() as conn:
            return {r[0] for r in conn.execute("SELECT name FROM kb_segments")}

    # -- writing ----------------------------------------------------------

    @contextmanager
    def writer_lock(self, wait: float | None = None, on_wait=None) -> Iterator[None]:
        """One writer across every replica: an advisory lock held by this connection until the write ends."""
        conn = self.connect()
        conn.autocommit = True
        try:
            deadline = None if wait is None else time.monotonic() + wait
            told = False
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()[0]:
                if deadline is not None and time.monotonic() >= deadline:
                    raise IndexBusyError("another replica is writing to the knowledge base; try again when it is done")
                if on_wait and not told:
                    on_wait("waiting for a writer on another replica to finish")
                    told = True
                time.sleep(0.1)
            yield
        finally:
            conn.close()  # ends the session, and with it the lock

    def publish(self, segment_dir: Path) -> None:
        """Add a finished segment and make it live, in one transaction; then let go of the
        segments neither the new snapshot nor the one before it lists."""
        name = segment_dir.name
        manifest = (segment_dir / "manifest.json").read_text()
        with self.connect() as conn, conn.transaction():
            conn.execute("INSERT INTO kb_segments (name, manifest, created) VALUES (%s, %s, %s)", (name, manifest, time.time()))
            for f in sorted(p for p in segment_dir.rglob("*") if p.is_file() and p.name not in ("kb.sqlite", "manifest.json")):
                conn.execute("INSERT INTO kb_segment_files (segment, path, data) VALUES (%s, %s, %s)",
                             (name, str(f.relative_to(segment_dir)), f.read_bytes()))
            local = sqlite3.connect(f"file:{segment_dir / 'kb.sqlite'}?mode=ro", uri=True)
            try:
                for table, columns in (("articles", ARTICLE_COLUMNS), ("chunks", CHUNK_COLUMNS)):
                    rows = local.execute(f"SELECT {', '.join(columns)} FROM {table}")
                    sql = (f"INSERT INTO kb_{table} (segment, {', '.join(columns)}) "
                           f"VALUES (%s, {', '.join(['%s'] * len(columns))})")
                    with conn.cursor() as cur:
                        while batch := rows.fetchmany(ROWS_PER_BATCH):
                            cur.executemany(sql, [(name, *r) for r in batch])
            finally:
                local.close()
            previous = conn.execute("SELECT name FROM kb_live FOR UPDATE").fetchone()
            conn.execute("INSERT INTO kb_live (one, name, previous) VALUES (TRUE, %s, %s) "
                         "ON CONFLICT (one) DO UPDATE SET name = EXCLUDED.name, previous = EXCLUDED.previous",
                         (name, previous[0] if previous else None))
            needed = set()
            for snapshot in (name, previous[0] if previous else None):
                if snapshot:
                    row = conn.execute("SELECT manifest FROM kb_segments WHERE name = %s", (snapshot,)).fetchone()
                    needed.update(json.loads(row[0]).get("segments") or [snapshot])
            conn.execute("DELETE FROM kb_segments WHERE NOT (name = ANY(%s))", (sorted(needed),))

    # -- reading ----------------------------------------------------------

    def fetch(self, name: str, snapshots: Path) -> Path:
        """Copy a segment into `snapshots/<name>` (once: segments never change); its path."""
        from .store import SCHEMA as SQLITE_SCHEMA, fsync_dir

        final = snapshots / name
        if final.exists():
            return final
        snapshots.mkdir(parents=True, exist_ok=True)
        part = snapshots / f".fetching-{name}-{os.getpid()}-{threading.get_ident()}"
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir()
        try:
            with self.connect() as conn:
                row = conn.execute("SELECT manifest FROM kb_segments WHERE name = %s", (name,)).fetchone()
                if row is None:
                    raise KbError(f"segment {name} is not in the metadata database (pruned while being read?)")
                for path, data in conn.execute("SELECT path, data FROM kb_segment_files WHERE segment = %s", (name,)):
                    target = part / path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                local = sqlite3.connect(part / "kb.sqlite")
                try:
                    local.executescript(SQLITE_SCHEMA)
                    for table, columns in (("articles", ARTICLE_COLUMNS), ("chunks", CHUNK_COLUMNS)):
                        with conn.cursor(name=f"fetch_{table}") as cur:  # server-side: a big segment streams
                            cur.execute(f"SELECT {', '.join(columns)} FROM kb_{table} WHERE segment = %s ORDER BY id", (name,))
                            while batch := cur.fetchmany(ROWS_PER_BATCH):
                                local.executemany(f"INSERT INTO {table} ({', '.join(columns)}) "
                                                  f"VALUES ({', '.join('?' * len(columns))})", batch)
                    local.commit()
                finally:
                    local.close()
                (part / "manifest.json").write_text(row[0])
            try:
                os.replace(part, final)
            except OSError:  # another thread or process of this replica fetched it first
                if not final.exists():
                    raise
                shutil.rmtree(part, ignore_errors=True)
            fsync_dir(snapshots)
        except BaseException:
            shutil.rmtree(part, ignore_errors=True)
            raise
        return final

    def close(self) -> None:
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
