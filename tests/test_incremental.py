"""Incremental writes: a write of a few articles adds a delta segment instead of rebuilding, and
ranks exactly as a fresh build of the same articles (BM25 statistics summed across segments)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import REPO
from kb.build import MAX_SEGMENTS
from kb.config import Settings
from kb.evaluate import load_queries
from kb.service import KnowledgeBase
from kb.store import DataDir, Manifest, SnapshotFiles

BUNDLED = REPO / "corpus"
NEW_ARTICLE = """---
id: delta-{i}
title: "Delta {i}: RuntimeError in fused kernel {i}"
lang: en
tags: [cuda]
---
# Delta {i}

## Error

```text
RuntimeError: fused_adam_{i} kernel failed: CUDA error: an illegal memory access was encountered
```

## Root cause

Kernel {i} was built for another architecture.

## Fix

Rebuild kernel {i} with `TORCH_CUDA_ARCH_LIST` set to the GPU's compute capability.
"""


def manifest(kb: KnowledgeBase) -> Manifest:
    return Manifest.read(SnapshotFiles(kb.data.current()).manifest)


def answers(kb: KnowledgeBase, queries) -> dict[str, tuple]:
    out = {}
    for q in queries:
        r = kb.search(q.query, top_k=5)
        out[q.qid] = (tuple(x.article_id for x in r.results), r.verdict,
                      tuple(round(x.confidence, 6) for x in r.results))
    return out


@pytest.fixture(scope="module")
def dev_queries():
    return load_queries(REPO / "corpus/eval/queries.jsonl")


def bundled_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "bundled"
    shutil.copytree(BUNDLED, dest, ignore=shutil.ignore_patterns("eval", "*.jsonl"))
    return dest


def test_writes_after_a_build_rank_as_a_fresh_build_of_the_same_articles(tmp_path, tokenizer, dev_queries):
    corpus = bundled_copy(tmp_path)
    kb = KnowledgeBase(Settings(data_dir=tmp_path / "inc", embed_model="hash"), tokenizer=tokenizer)
    assert not kb.ingest([corpus]).failed
    base = manifest(kb).segments
    assert len(base) == 1 and kb.stats()["segments"] == 1
    n0 = kb.stats()["articles"]

    files = sorted(p for p in corpus.rglob("*.md") if p.name.upper() not in ("README.MD", "AUTHORING.MD"))
    # 1. three articles edited on disk, re-ingested: a delta with the new versions
    for f in files[:3]:
        f.write_text(f.read_text() + "\n\nSee also: RuntimeError: NCCL error in edited article.\n")
    report = kb.ingest([corpus])
    assert len(report.updated) == 3 and report.encoded_chunks < 40
    # 2. new articles through the API, one of them replaced again (a tombstone in a delta)
    for i in range(4):
        kb.add_article(NEW_ARTICLE.format(i=i))
    kb.add_article(NEW_ARTICLE.format(i=2).replace("another architecture", "a stale build cache"))
    # 3. deletions: one from the base, one from a delta
    removed = _id_of(files[10])
    kb.delete_article(removed)
    kb.delete_article("delta-3")

    chain = manifest(kb).segments
    assert chain[0] == base[0] and len(chain) == 1 + 1 + 5 + 2  # the base was never rebuilt
    assert "delta-3" not in kb.searcher().index_of and removed not in kb.searcher().index_of
    assert "a stale build cache" in kb.get_article("delta-2")["root_cause"]
    assert kb.stats()["articles"] == len(kb.searcher().articles) == n0 + 3 - 1
    assert kb.stats()["chunks"] == kb.searcher().n_rows  # the manifest's count follows the tombstones

    # a fresh build of the same articles, from the same files
    files[10].unlink()
    fresh = KnowledgeBase(Settings(data_dir=tmp_path / "fresh", embed_model="hash"), tokenizer=tokenizer)
    assert not fresh.ingest([corpus, kb.data.articles_dir]).failed
    assert sorted(fresh.searcher().index_of) == sorted(kb.searcher().index_of)

    want = answers(fresh, dev_queries)
    got = answers(kb, dev_queries)
    differ = [q for q in want if want[q] != got[q]]
    assert not differ, [(q, want[q], got[q]) for q in differ[:5]]

    # `compact` folds the chain into one segment, and the ranking stays the same
    report = kb.compact()
    assert len(manifest(kb).segments) == 1 and report.snapshot
    assert answers(kb, dev_queries[::7]) == {q.qid: want[q.qid] for q in dev_queries[::7]}


def _id_of(path: Path) -> str:
    from kb.ingest import load_document

    return load_document(path).id


def test_a_one_article_write_touches_only_that_article(kb):
    before = manifest(kb)
    report = kb.writer().upsert(_doc(kb, NEW_ARTICLE.format(i=9)))
    after = manifest(kb)
    assert after.segments[:-1] == before.segments and report.encoded_chunks <= 5
    own = sqlite3.connect(SnapshotFiles(kb.data.current()).db)
    assert own.execute("SELECT id FROM articles").fetchall() == [("delta-9",)]  # the new segment holds only it
    assert kb.search("RuntimeError: fused_adam_9 kernel failed: CUDA error: an illegal memory access was "
                     "encountered").results[0].article_id == "delta-9"
    assert after.articles == before.articles + 1


def test_a_long_chain_is_folded_by_the_next_write(kb):
    for i in range(MAX_SEGMENTS + 1):
        kb.add_article(NEW_ARTICLE.format(i=i))
        assert len(manifest(kb).segments) <= MAX_SEGMENTS
    assert {f"delta-{i}" for i in range(MAX_SEGMENTS + 1)} <= set(kb.searcher().index_of)
    # only the live snapshot and the one before it are on disk, with the segments they list
    data = DataDir(kb.settings.data_dir)
    on_disk = {p.name for p in data.snapshots.iterdir()}
    listed = set(manifest(kb).segments) | {kb.data.current().name}
    assert listed <= on_disk and len(on_disk - listed) <= MAX_SEGMENTS


def _doc(kb: KnowledgeBase, text: str):
    from kb.ingest import parse_document

    doc = parse_document(text.encode(), "new.md")
    return doc.__class__(**{**doc.__dict__, "path": str(kb.data.articles_dir / f"{doc.id}.md")})


def test_kb_compact_from_the_command_line(kb):
    import subprocess
    import sys

    from conftest import cli_env

    kb.add_article(NEW_ARTICLE.format(i=1))
    env = cli_env(kb.settings.data_dir)
    out = subprocess.run([sys.executable, "-m", "kb_cli", "compact", "--json"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["segments_before"], report["segments"]) == (2, 1)
    again = subprocess.run([sys.executable, "-m", "kb_cli", "compact"], env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "Nothing to fold" in again.stdout
    assert kb.search("RuntimeError: fused_adam_1 kernel failed").results[0].article_id == "delta-1"
