"""The real `kb serve` under writes that pile up: reads keep answering, writes answer honestly."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from kb.store import DataDir

from conftest import ADMIN_TOKEN
from test_reliability import fixture_data_dir, running_server  # noqa: F401 - a fixture and a helper

ARTICLE = "---\nid: piled-{n}\ntitle: Piled {n}\n---\n\n## Error\n\nRuntimeError: piled up {n}\n"


@pytest.mark.slow
def test_reads_answer_while_many_admin_writes_wait_for_the_writer_lock(fixture_data_dir, tmp_path):  # noqa: F811
    with running_server(fixture_data_dir, tmp_path / "serve.log", KB_REQUEST_TIMEOUT_S="4") as server:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "text/markdown"}
        started = threading.Event()

        def write(n: int) -> int:
            started.set()
            return httpx.post(server.url + "/v1/articles", content=ARTICLE.format(n=n), headers=headers, timeout=90).status_code

        with DataDir(fixture_data_dir).writer_lock(), ThreadPoolExecutor(48) as pool:  # a long `kb ingest` runs
            writes = [pool.submit(write, n) for n in range(48)]  # more writers than the server's thread pool
            started.wait(10)
            time.sleep(1.0)  # let them all reach the server and queue for the lock
            health = httpx.get(server.url + "/healthz", timeout=15)
            article = httpx.get(server.url + "/v1/articles/torch-ext-cache-hang", timeout=15)
            assert health.status_code == 200 and article.status_code in (200, 404)
        statuses = [w.result() for w in writes]
        assert set(statuses) <= {201, 503}, statuses
