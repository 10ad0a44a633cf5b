"""Shared fixtures: a small bilingual corpus indexed with the deterministic `hash` encoder.

Most tests use `hash` (no model weights, fast and deterministic); tests marked `slow`
use the real bundled model.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from kb.config import Settings  # noqa: E402
from kb.service import KnowledgeBase  # noqa: E402
from kb.tokenize import Tokenizer  # noqa: E402

DATA = Path(__file__).parent / "data"
FIXTURE_CORPUS = DATA / "corpus"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def tokenizer() -> Tokenizer:
    return Tokenizer()


@pytest.fixture
def corpus_copy(tmp_path) -> Path:
    """A writable copy of the fixture corpus (tests edit and delete files in it)."""
    dest = tmp_path / "corpus"
    shutil.copytree(FIXTURE_CORPUS, dest)
    return dest


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path / "data", embed_model="hash")


@pytest.fixture
def kb(settings, corpus_copy, tokenizer) -> KnowledgeBase:
    base = KnowledgeBase(settings, tokenizer=tokenizer)
    report = base.ingest([corpus_copy])
    assert not report.failed, report.failed
    return base


def cli_env(data_dir: Path, **extra) -> dict:
    env = {**os.environ, "KB_DATA_DIR": str(data_dir), "KB_EMBED_MODEL": "hash", "HF_HUB_OFFLINE": "1"}
    env.pop("KB_URL", None)
    env.update(extra)
    return env


ADMIN_TOKEN = "test-admin-token-0123456789"


@pytest.fixture
def api_settings(settings):
    from api.settings import ApiSettings

    return ApiSettings(data_dir=settings.data_dir, embed_model="hash", admin_token=ADMIN_TOKEN)


@pytest.fixture
def client(kb, api_settings):
    """A TestClient over the real app and the fixture index (lifespan runs)."""
    from fastapi.testclient import TestClient

    from api.main import create_app

    with TestClient(create_app(api_settings, kb=kb)) as c:
        yield c


class ThreadedServer:
    """uvicorn serving the app on a free 127.0.0.1 port, in a thread."""

    def __init__(self, app):
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()
