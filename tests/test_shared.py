"""KB_METADATA_URL: replicas sharing one knowledge base through a real PostgreSQL server,
started by the test in a temp dir (skipped where the server binaries are not installed)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading

import pytest

pytest.importorskip("psycopg")

from conftest import FIXTURE_CORPUS  # noqa: E402
from kb.config import Settings  # noqa: E402
from kb.errors import IndexBusyError, KbError  # noqa: E402
from kb.service import KnowledgeBase  # noqa: E402
from kb.store import Manifest, SnapshotFiles  # noqa: E402

PROBE = """---
id: shared-probe
title: "Probe: ZZ_SHARED_PROBE collective failed"
lang: en
---
# Probe

## Error

```text
RuntimeError: ZZ_SHARED_PROBE collective failed on rank 3
```

## Root cause

A probe.

## Fix

Nothing to fix.
"""


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL 15 server on a free loopback port, for this module only."""
    if not (shutil.which("initdb") and shutil.which("pg_ctl")):
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed: the KB_METADATA_URL tests need them")
    root = tempfile.mkdtemp(prefix="kb-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root
        nobody = pwd.getpwnam("nobody")
        os.chown(root, nobody.pw_uid, nobody.pw_gid)
        as_user = ["runuser", "-u", "nobody", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = os.path.join(root, "db")
    subprocess.run([*as_user, "initdb", "-D", db, "-A", "trust", "-U", "kb", "--no-sync"], check=True,
                   capture_output=True, cwd=root)
    subprocess.run([*as_user, "pg_ctl", "-D", db, "-l", os.path.join(root, "log"), "-w", "start", "-o",
                    f"-k {root} -c listen_addresses=127.0.0.1 -p {port} -c fsync=off"], check=True,
                   capture_output=True, cwd=root)
    try:
        yield f"postgresql://kb@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, "pg_ctl", "-D", db, "-m", "immediate", "stop"], capture_output=True, cwd=root)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def database(postgres):
    """An empty database per test."""
    import psycopg

    name = f"kb_{os.getpid()}_{threading.get_ident()}_{os.urandom(3).hex()}"
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres.rsplit("/", 1)[0] + "/" + name


def replica(tmp_path, name: str, url: str, **extra) -> KnowledgeBase:
    return KnowledgeBase(Settings(data_dir=tmp_path / name, embed_model="hash", metadata_url=url,
                                  record_searches=False, **extra))


def top(kb: KnowledgeBase, query: str) -> str | None:
    results = kb.search(query, top_k=5).results
    return results[0].article_id if results else None


QUERIES = [
    "Invalidate trace cache @ step 7: expected module 1, but got module 2",
    "NCCL watchdog timeout",
    "CUDA out of memory. Tried to allocate 2.00 GiB",
    "显存不足",
]


def test_a_write_on_one_replica_is_seen_by_the_others(tmp_path, database):
    a, b = replica(tmp_path, "a", database), replica(tmp_path, "b", database)
    a.ingest([FIXTURE_CORPUS])
    # b has no files of its own: it answers from the shared index, exactly as a does
    assert [top(b, q) for q in QUERIES] == [top(a, q) for q in QUERIES]
    assert all(top(b, q) for q in QUERIES[:3])

    a.add_article(PROBE)  # a delta segment, published through PostgreSQL
    assert top(b, "RuntimeError: ZZ_SHARED_PROBE collective failed on rank 0") == "shared-probe"
    assert b.get_article("shared-probe")["title"].startswith("Probe")
    assert b.stats()["segments"] == 2

    b.delete_article("shared-probe")  # and the other way round
    assert top(a, "RuntimeError: ZZ_SHARED_PROBE collective failed on rank 0") != "shared-probe"

    # the database keeps only the segments the live snapshot and the one before it read
    import psycopg

    with psycopg.connect(database) as conn:
        kept = {r[0] for r in conn.execute("SELECT name FROM kb_segments")}
        live, previous = conn.execute("SELECT name, previous FROM kb_live").fetchone()
    needed = set()
    for name in (live, previous):
        needed |= set(Manifest.read(SnapshotFiles(a.data.snapshots / name).manifest).segments)
    assert kept == needed


def test_one_writer_at_a_time_across_replicas(tmp_path, database):
    a, b = replica(tmp_path, "a", database), replica(tmp_path, "b", database)
    a.ingest([FIXTURE_CORPUS])
    with a.data.writer_lock():
        with pytest.raises(IndexBusyError, match="another replica"):
            b.ingest([FIXTURE_CORPUS], wait=0.3)
    b.add_article(PROBE)  # free again once a's write ends
    assert top(a, "RuntimeError: ZZ_SHARED_PROBE collective failed on rank 0") == "shared-probe"


def test_a_failed_publish_leaves_the_live_index_as_it_was(tmp_path, database, monkeypatch):
    a, b = replica(tmp_path, "a", database), replica(tmp_path, "b", database)
    a.ingest([FIXTURE_CORPUS])
    before = b.stats()["snapshot"]
    from kb.shared import SharedState

    real = SharedState.publish

    def dies_midway(self, segment_dir):
        conn = self.connect()
        conn.execute("INSERT INTO kb_segments (name, manifest, created) VALUES (%s, '{}', 0)", (segment_dir.name,))
        conn.close()  # uncommitted: rolled back, as after a crash
        raise ConnectionError("connection to the metadata database lost")

    monkeypatch.setattr(SharedState, "publish", dies_midway)
    with pytest.raises(ConnectionError):
        a.add_article(PROBE)
    monkeypatch.setattr(SharedState, "publish", real)
    assert b.stats()["snapshot"] == before == a.stats()["snapshot"]
    assert sorted(p.name for p in a.data.snapshots.iterdir()) == [before]  # nothing half-published left
    assert top(b, "RuntimeError: ZZ_SHARED_PROBE collective failed on rank 0") != "shared-probe"
    a.add_article(PROBE)  # and the next write goes through
    assert top(b, "RuntimeError: ZZ_SHARED_PROBE collective failed on rank 0") == "shared-probe"


def test_replicas_on_qdrant_and_postgresql(tmp_path, database):
    pytest.importorskip("qdrant_client")
    store = tmp_path / "qdrant"  # the embedded store: both replicas live in this process
    a = replica(tmp_path, "a", database, index_backend="qdrant", qdrant_path=store)
    b = replica(tmp_path, "b", database, index_backend="qdrant", qdrant_path=store)
    a.ingest([FIXTURE_CORPUS])
    assert b.stats()["backend"] == "qdrant"
    assert [top(b, q) for q in QUERIES] == [top(a, q) for q in QUERIES]
    b.add_article(PROBE)
    assert top(a, "RuntimeError: ZZ_SHARED_PROBE collective failed on rank 0") == "shared-probe"


def test_a_metadata_url_that_is_not_postgresql_says_so(tmp_path):
    with pytest.raises(KbError, match="PostgreSQL URL"):
        replica(tmp_path, "a", "mysql://kb@localhost/kb").search("x")
    with pytest.raises(KbError, match="cannot reach the metadata database"):
        replica(tmp_path, "a", "postgresql://kb@127.0.0.1:1/kb").search("x")


def test_kb_serve_names_the_shared_parts_but_never_a_password(tmp_path):
    from kb_cli.main import _shared_parts

    line = _shared_parts(Settings(data_dir=tmp_path, metadata_url="postgresql://kb:s3cret-pw@db.internal:5432/kb",
                                  qdrant_url="http://qdrant-0:6333"))
    assert "db.internal/kb" in line and "qdrant-0" in line and "s3cret" not in line
