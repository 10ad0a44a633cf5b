"""The HTTP API through the real app: every endpoint, every error, writes, a real server process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from conftest import ADMIN_TOKEN, REPO, cli_env
from kb_cli.main import default_workers

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
NEW_ARTICLE = """---
id: vllm-kv-cache-too-small
title: "vLLM: max seq len larger than the KV cache"
lang: en
tags: [vllm, serving]
---

## Error

```text
ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (14336). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
```

## Root cause

The KV cache left after loading the weights cannot hold one sequence of max_model_len tokens.

## Fix

```bash
vllm serve my-model --max-model-len 8192 --gpu-memory-utilization 0.95
```
"""


def test_search_contract(client):
    r = client.post("/v1/search", json={"query": "NCCL watchdog caught collective operation timeout", "top_k": 3})
    assert r.status_code == 200
    body = r.json()
    assert set(body) >= {"results", "confident"}
    top = body["results"][0]
    assert top["article_id"] == "nccl-p2p-hang"
    assert set(top) >= {"article_id", "title", "lang", "score", "root_cause", "fix", "snippet", "source", "tags"}
    assert "NCCL_P2P_DISABLE=1" in top["fix"] and len(body["results"]) <= 3


@pytest.mark.parametrize("query", [
    "NCCL watchdog caught collective operation timeout",
    "npm ERR! code ERESOLVE unable to resolve dependency tree",
    "how do I bake a chocolate cake for my grandmother",
    "训练卡住了，日志一直刷 Invalidate trace cache @ step 12: expected module 3, but got module 7",
])
def test_search_carries_the_cores_verdict_and_reason(client, kb, query):
    body = client.post("/v1/search", json={"query": query, "top_k": 3}).json()
    assert body["verdict"] in ("answer", "maybe", "none")
    assert isinstance(body["reason"], str) and body["reason"].strip()
    assert body["confident"] == (body["verdict"] == "answer")
    core = kb.search(query, top_k=3)  # the API passes the core's verdict through, unchanged
    assert (body["verdict"], body["reason"], body["confident"]) == (core.verdict, core.reason, core.confident)


@pytest.mark.parametrize(
    "payload, status, words",
    [
        ({"query": ""}, 422, "empty"),
        ({"query": "   \n\t "}, 422, "empty"),
        ({"query": "x" * (64 * 1024 + 10)}, 413, "limit"),
        ({"query": "NCCL", "top_k": 0}, 422, "top_k"),
        ({"query": "NCCL", "top_k": 51}, 422, "top_k"),
        ({"top_k": 3}, 422, "query"),
        ({"query": 12}, 422, "query"),
    ],
)
def test_search_errors_are_clear_json(client, payload, status, words):
    r = client.post("/v1/search", json=payload)
    assert r.status_code == status
    assert words in r.json()["detail"]
    assert "Traceback" not in r.text


def test_malformed_json_is_422(client):
    r = client.post("/v1/search", content=b'{"query": "x",', headers={"content-type": "application/json"})
    assert r.status_code == 422 and "not valid JSON" in r.json()["detail"]


def test_huge_body_is_413_before_parsing(client):
    r = client.post("/v1/search", content=b'{"query": "' + b"a" * (3 * 1024 * 1024) + b'"}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 413 and "detail" in r.json()


def test_get_article_and_404(client):
    r = client.get("/v1/articles/zero3-trace-cache")
    assert r.status_code == 200 and r.json()["lang"] == "zh" and "use_vllm: true" in r.json()["fix"]
    r = client.get("/v1/articles/no-such-article")
    assert r.status_code == 404 and "no-such-article" in r.json()["detail"]
    r = client.get("/v1/articles/..%2F..%2Fetc%2Fpasswd")
    assert r.status_code == 404


def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["articles"] == 5 and body["model_id"] == "hash-256" and body["format_version"] == 2
    assert body["segments"] == 1  # one segment after a full ingest; writes add deltas (`kb compact` folds them)


def test_openapi_docs(client):
    assert client.get("/docs").status_code == 200
    spec = client.get("/openapi.json").json()
    assert "/v1/search" in spec["paths"] and "/v1/articles/{article_id}" in spec["paths"]


def test_writes_need_the_token(client):
    r = client.post("/v1/articles", content=NEW_ARTICLE, headers={"content-type": "text/markdown"})
    assert r.status_code == 401 and "Bearer" in r.json()["detail"]
    r = client.post("/v1/articles", content=NEW_ARTICLE, headers={"content-type": "text/markdown", "Authorization": "Bearer wrong"})
    assert r.status_code == 401
    r = client.delete("/v1/articles/nccl-p2p-hang", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401
    assert client.get("/v1/articles/nccl-p2p-hang").status_code == 200


def test_writes_disabled_without_configured_token(kb, api_settings):
    from fastapi.testclient import TestClient

    from api.main import create_app

    with TestClient(create_app(api_settings.model_copy(update={"admin_token": None}), kb=kb)) as c:
        r = c.post("/v1/articles", content=NEW_ARTICLE, headers={"content-type": "text/markdown", **AUTH})
        assert r.status_code == 403 and "KB_ADMIN_TOKEN" in r.json()["detail"]


def test_add_search_delete_article(client, kb):
    r = client.post("/v1/articles", content=NEW_ARTICLE, headers={"content-type": "text/markdown", **AUTH})
    assert r.status_code == 201 and r.json() == {"article_id": "vllm-kv-cache-too-small", "created": True}
    q = "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (20480)."
    top = client.post("/v1/search", json={"query": q}).json()["results"][0]
    assert top["article_id"] == "vllm-kv-cache-too-small" and "--max-model-len" in top["fix"]
    r = client.post("/v1/articles", content=NEW_ARTICLE.replace("0.95", "0.97"), headers={"content-type": "text/markdown", **AUTH})
    assert r.status_code == 200 and r.json()["created"] is False
    assert "0.97" in client.get("/v1/articles/vllm-kv-cache-too-small").json()["fix"]
    assert (kb.data.articles_dir / "vllm-kv-cache-too-small.md").exists()
    assert client.delete("/v1/articles/vllm-kv-cache-too-small", headers=AUTH).status_code == 204
    assert client.get("/v1/articles/vllm-kv-cache-too-small").status_code == 404
    assert client.delete("/v1/articles/vllm-kv-cache-too-small", headers=AUTH).status_code == 404
    assert not (kb.data.articles_dir / "vllm-kv-cache-too-small.md").exists()


def test_add_article_as_json_and_bad_article(client):
    r = client.post("/v1/articles", json={"id": "json-one", "title": "T", "lang": "en", "tags": ["x"],
                                          "body": "## Root cause\n\nA.\n\n## Fix\n\nB.\n"}, headers=AUTH)
    assert r.status_code == 201
    assert client.get("/v1/articles/json-one").json()["fix"] == "B."
    r = client.post("/v1/articles", content="---\nid: [broken\n---\nx\n", headers={"content-type": "text/markdown", **AUTH})
    assert r.status_code == 422 and "front matter" in r.json()["detail"]
    r = client.post("/v1/articles", content="---\nid: ../../etc/passwd\n---\nx\n", headers={"content-type": "text/markdown", **AUTH})
    assert r.status_code == 422 and "invalid id" in r.json()["detail"]
    r = client.post("/v1/articles", json={"title": "no id"}, headers=AUTH)
    assert r.status_code == 422


def test_searches_never_fail_during_writes(client):
    errors: list[str] = []
    stop = threading.Event()

    def searcher():
        while not stop.is_set():
            r = client.post("/v1/search", json={"query": "CUDA out of memory during evaluation"})
            if r.status_code != 200 or not r.json()["results"]:
                errors.append(f"{r.status_code} {r.text[:200]}")

    threads = [threading.Thread(target=searcher) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for i in range(6):
            body = NEW_ARTICLE.replace("vllm-kv-cache-too-small", f"vllm-kv-{i}")
            r = client.post("/v1/articles", content=body, headers={"content-type": "text/markdown", **AUTH})
            assert r.status_code == 201
            # visible to the very next search after the 2xx
            assert client.get(f"/v1/articles/vllm-kv-{i}").status_code == 200
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_real_server_process(kb, settings):
    port = _free_port()
    env = cli_env(settings.data_dir, KB_ADMIN_TOKEN=ADMIN_TOKEN)
    proc = subprocess.Popen([sys.executable, "-m", "kb_cli", "serve", "--port", str(port)], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        assert f"with {default_workers()} worker(s)".encode() in proc.stdout.readline()
        for _ in range(300):
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            pytest.fail("server did not start: " + proc.stdout.read1().decode(errors="replace") if proc.stdout else "")
        r = httpx.post(url + "/v1/search", json={"query": "Invalidate trace cache @ step 7: expected module 1, but got module 2"})
        assert r.status_code == 200 and r.json()["results"][0]["article_id"] == "zero3-trace-cache"
        # the CLI answers through the server when KB_URL is set
        cli = subprocess.run([sys.executable, "-m", "kb_cli", "search", "--json", "NCCL watchdog timeout"],
                             env={**env, "KB_URL": url, "KB_DATA_DIR": "/nonexistent"}, capture_output=True, text=True)
        assert cli.returncode == 0, cli.stderr
        assert json.loads(cli.stdout)["results"][0]["article_id"] == "nccl-p2p-hang"
        # One worker per core by default; a write through one is seen by every worker's next
        # request (each request here is a new connection, which the kernel hands to any worker).
        article = "---\nid: fresh-worker-note\ntitle: Fresh note\n---\n\nRuntimeError: ZZ_WORKER_PROBE failed\n"
        assert httpx.post(url + "/v1/articles", content=article, headers={**AUTH, "content-type": "text/markdown"}).status_code == 201
        for _ in range(12):
            assert httpx.get(url + "/v1/articles/fresh-worker-note").status_code == 200
            top = httpx.post(url + "/v1/search", json={"query": "RuntimeError: ZZ_WORKER_PROBE failed"}).json()
            assert top["results"][0]["article_id"] == "fresh-worker-note"
        assert httpx.delete(url + "/v1/articles/fresh-worker-note", headers=AUTH).status_code == 204
        for _ in range(12):
            assert httpx.get(url + "/v1/articles/fresh-worker-note").status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_http_response_models_mirror_the_core_result_shape(kb):
    """One shape: the API's documented models carry exactly the fields the core returns."""
    from api.schemas import Evidence as PublicEvidence, SearchResponsePublic, SearchResultPublic

    response = kb.search("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", top_k=2)
    body = response.as_dict()
    assert set(SearchResponsePublic.model_fields) == set(body)
    result = body["results"][0]
    assert set(SearchResultPublic.model_fields) == set(result)
    assert set(PublicEvidence.model_fields) <= set(result["evidence"])
    SearchResponsePublic.model_validate(body)  # and the values fit the documented types
