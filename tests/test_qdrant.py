"""The qdrant index backend (qdrant-client's embedded local mode): the same answers as the local
files, through `kb ingest` and `kb serve` as a user runs them, and through writes."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest

pytest.importorskip("qdrant_client")

from conftest import REPO, cli_env  # noqa: E402
from kb.config import Settings  # noqa: E402
from kb.errors import KbError  # noqa: E402
from kb.evaluate import load_queries  # noqa: E402
from kb.service import KnowledgeBase  # noqa: E402
from kb.store import Manifest, SnapshotFiles  # noqa: E402
from kb.vectors import QdrantBackend  # noqa: E402
from test_api import _free_port  # noqa: E402

BUNDLED = REPO / "corpus"
ARTICLE = """---
id: qdrant-probe
title: "Probe: ZZ_QDRANT_PROBE kernel failure"
lang: en
---
# Probe

## Error

```text
RuntimeError: ZZ_QDRANT_PROBE kernel failed with status 7
```

## Root cause

The probe kernel was built for another GPU.

## Fix

Rebuild it for this GPU.
"""


def ingest(data_dir, *extra, **env) -> dict:
    out = subprocess.run([sys.executable, "-m", "kb_cli", "ingest", "--json", *extra, str(BUNDLED)],
                         env=cli_env(data_dir, **env), cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    root = tmp_path_factory.mktemp("backends")
    ingest(root / "local")
    qdrant_env = {"KB_INDEX_BACKEND": "qdrant", "KB_QDRANT_PATH": str(root / "store")}
    ingest(root / "qdrant", **qdrant_env)
    return root, qdrant_env


def test_kb_serve_on_qdrant_answers_the_dev_eval_as_local_does(indexes):
    root, qdrant_env = indexes
    queries = load_queries(REPO / "corpus/eval/queries.jsonl")
    local = KnowledgeBase(Settings(data_dir=root / "local", embed_model="hash", record_searches=False))
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kb_cli", "serve", "--port", str(port)],
                            env=cli_env(root / "qdrant", KB_RECORD_SEARCHES="0", **qdrant_env), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                health = httpx.get(url + "/healthz", timeout=1)
                if health.status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            pytest.fail("kb serve did not start")
        assert health.json()["backend"] == "qdrant"
        same = same_top5 = 0
        with httpx.Client(base_url=url, timeout=30) as http:
            for q in queries:
                served = http.post("/v1/search", json={"query": q.query, "top_k": 5}).json()
                mine = local.search(q.query, top_k=5)
                served_ids = [r["article_id"] for r in served["results"]]
                same += served_ids[:1] == [r.article_id for r in mine.results][:1]
                same_top5 += served_ids == [r.article_id for r in mine.results] and served["verdict"] == mine.verdict
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # BM25 in Qdrant takes kb's own IDF and stores kb's document weights: the same scores.
    assert same / len(queries) >= 0.99, f"top-1 agrees on {same} of {len(queries)}"
    assert same_top5 / len(queries) >= 0.99, f"top-5 and verdict agree on {same_top5} of {len(queries)}"


def test_writes_through_qdrant_are_deltas_and_answer(indexes, tmp_path):
    root, qdrant_env = indexes
    store = tmp_path / "store"
    settings = Settings(data_dir=tmp_path / "data", embed_model="hash", index_backend="qdrant", qdrant_path=store,
                        record_searches=False)
    kb = KnowledgeBase(settings)
    kb.ingest([BUNDLED])
    backend = QdrantBackend(path=store)

    def collections() -> set[str]:
        return {c.name for c in backend.client.get_collections().collections}

    kb.add_article(ARTICLE)
    m = Manifest.read(SnapshotFiles(kb.data.current()).manifest)
    assert len(m.segments) == 2 and m.backend == "qdrant"
    assert {f"kb_{s}" for s in m.segments} <= collections()
    top = kb.search("RuntimeError: ZZ_QDRANT_PROBE kernel failed with status 3")
    assert top.results[0].article_id == "qdrant-probe" and top.verdict == "answer"

    # a delete tombstones a base article: Qdrant filters it out, the rest still answers
    victim = "oom-fragmentation-expandable-segments"
    query = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. If reserved but unallocated memory "
             "is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
    assert kb.search(query).results[0].article_id == victim
    kb.delete_article(victim)
    assert victim not in [r.article_id for r in kb.search(query, top_k=50).results]

    # compact folds the chain into one collection; the old segments' collections are dropped
    kb.compact()
    m = Manifest.read(SnapshotFiles(kb.data.current()).manifest)
    assert len(m.segments) == 1
    kept = {p.name for p in kb.data.snapshots.iterdir()}
    assert collections() == {f"kb_{s}" for s in kept}
    assert kb.search("RuntimeError: ZZ_QDRANT_PROBE kernel failed with status 3").results[0].article_id == "qdrant-probe"


def test_switching_backend_moves_the_index_without_encoding_again(tmp_path):
    data = tmp_path / "data"
    first = ingest(data)
    assert first["encoded_chunks"] > 0
    moved = ingest(data, KB_INDEX_BACKEND="qdrant", KB_QDRANT_PATH=str(tmp_path / "store"))
    assert moved["encoded_chunks"] == 0 and moved["snapshot"]  # the vectors came from the cache
    m = Manifest.read(SnapshotFiles(data / "snapshots" / first["snapshot"]).manifest)
    moved_m = Manifest.read(SnapshotFiles(data / "snapshots" / moved["snapshot"]).manifest)
    assert moved_m.backend == "qdrant" and moved_m.articles == m.articles > 150  # every article moved


def test_qdrant_without_a_location_says_what_to_set(tmp_path):
    with pytest.raises(KbError, match="KB_QDRANT_URL .* or KB_QDRANT_PATH"):
        KnowledgeBase(Settings(data_dir=tmp_path, embed_model="hash", index_backend="qdrant")).ingest([BUNDLED])
    out = subprocess.run([sys.executable, "-m", "kb_cli", "serve", "--workers", "2"], cwd=REPO,
                         env=cli_env(tmp_path, KB_QDRANT_PATH=str(tmp_path / "store")), capture_output=True, text=True)
    assert out.returncode != 0 and "--workers 1" in out.stderr and "KB_QDRANT_URL" in out.stderr


def test_a_write_without_the_backend_setting_keeps_the_index_where_it_is(tmp_path):
    """A replica or an admin who forgot KB_INDEX_BACKEND must not move a Qdrant index back to files."""
    store = tmp_path / "store"
    data = tmp_path / "data"
    KnowledgeBase(Settings(data_dir=data, embed_model="hash", index_backend="qdrant", qdrant_path=store)).ingest([BUNDLED])
    kb = KnowledgeBase(Settings(data_dir=data, embed_model="hash", qdrant_path=store, record_searches=False))
    kb.add_article(ARTICLE)
    m = Manifest.read(SnapshotFiles(kb.data.current()).manifest)
    assert m.backend == "qdrant" and len(m.segments) == 2
    assert kb.search("RuntimeError: ZZ_QDRANT_PROBE kernel failed with status 1").results[0].article_id == "qdrant-probe"
