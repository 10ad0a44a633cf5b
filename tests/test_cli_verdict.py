"""`kb search` renders the core's verdict (answer / maybe / none) and its reason, and keeps no
thresholds of its own: locally, through a running server (KB_URL / --url), and as --json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO, ThreadedServer, cli_env
from kb_cli import render

# Off-topic for an ML knowledge base: the fixture corpus has no article for it (verdict `none`).
NONE_QUERY = "npm ERR! code ERESOLVE unable to resolve dependency tree"
ANSWER_QUERY = "NCCL watchdog timeout"
NONE_WORDS = "No article in the knowledge base covers this error"
ADD_WORDS = "Add one: write a Markdown article (see corpus/AUTHORING.md) and run `kb ingest FILE`, or POST it to /v1/articles."


def kb_search(env, *args) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "kb_cli", "search", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def as_json(env, query: str) -> dict:
    return json.loads(kb_search(env, "--json", query).stdout)


def test_json_passes_the_verdict_and_reason_through(kb, settings):
    env = cli_env(settings.data_dir)
    for query in (NONE_QUERY, ANSWER_QUERY):
        data = as_json(env, query)
        assert data["verdict"] in ("answer", "maybe", "none")
        assert data["reason"].strip()
        assert data["confident"] == (data["verdict"] == "answer")
    assert as_json(env, NONE_QUERY)["verdict"] == "none", "the fixture corpus should have no article for an npm error"
    assert as_json(env, ANSWER_QUERY)["verdict"] == "answer"


def test_none_verdict_says_no_article_shows_related_and_how_to_add_one(kb, settings):
    env = cli_env(settings.data_dir)
    data = as_json(env, NONE_QUERY)
    assert data["verdict"] == "none" and data["results"]
    out = kb_search(env, NONE_QUERY).stdout
    first = out.splitlines()[0]
    assert first == f"{NONE_WORDS} ({data['reason']})."
    assert "Related, not a match:" in out
    top = data["results"][0]
    assert f"[{top['article_id']}]  related, not a match · {round(top['confidence'] * 100)}%" in out
    assert out.count("related, not a match ·") == 1  # the rest are plainly "related"
    assert "  related · " in out
    assert "Fix:" not in out  # no fix offered as if it were the answer
    assert out.rstrip().endswith(ADD_WORDS)
    for word in ("confident match", "likely match", "possible match", "weak match"):
        assert word not in out.lower()


def test_answer_verdict_leads_with_the_reason(kb, settings):
    env = cli_env(settings.data_dir)
    data = as_json(env, ANSWER_QUERY)
    out = kb_search(env, ANSWER_QUERY).stdout
    assert out.splitlines()[0] == f"Answer (confident): {data['reason']}"
    assert "[nccl-p2p-hang]  answer · " in out and "Fix:" in out and "NCCL_P2P_DISABLE=1" in out
    assert NONE_WORDS not in out and "Add one:" not in out


def test_maybe_verdict_asks_to_check_and_labels_the_rest_related(capsys):
    """The layout for `maybe` (rendering only: which queries get `maybe` is the core's business)."""
    data = {"verdict": "maybe", "confident": False, "reason": "the error type `FooError` appears in one article only",
            "results": [
                {"article_id": "a", "title": "First", "confidence": 0.31, "root_cause": "Cause A.", "fix": "Fix A.",
                 "snippet": "", "tags": []},
                {"article_id": "b", "title": "Second", "confidence": 0.9, "root_cause": "Cause B.", "fix": "Fix B.",
                 "snippet": "", "tags": []},
            ]}
    render.answer(data)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Possible match — check it against your error: the error type `FooError` appears in one article only"
    assert "[a]  possible match · 31%" in out and "[b]  related · 90%" in out  # the verdict, not the number, decides
    assert "Fix A." in out and "Fix B." not in out
    assert NONE_WORDS not in out and "Add one:" not in out


def test_no_results_is_a_none_with_the_way_to_add_one(capsys):
    render.answer({"verdict": "none", "confident": False, "reason": "the index is empty", "results": []})
    out = capsys.readouterr().out
    assert out.splitlines() == [f"{NONE_WORDS} (the index is empty).", ADD_WORDS]


@pytest.fixture
def server(kb, api_settings):
    from api.main import create_app

    with ThreadedServer(create_app(api_settings, kb=kb)) as s:
        yield s


def test_through_a_server_the_output_is_the_same(kb, settings, server):
    local_env = cli_env(settings.data_dir)
    remote_env = {**cli_env(settings.data_dir / "not-here"), "KB_URL": server.url}
    for query in (NONE_QUERY, ANSWER_QUERY):
        local = kb_search(local_env, query).stdout
        remote = kb_search(remote_env, query).stdout
        assert remote == local, query
    assert kb_search(remote_env, NONE_QUERY).stdout.startswith(NONE_WORDS)
    remote_json = as_json(remote_env, NONE_QUERY)
    assert remote_json["verdict"] == "none" and remote_json["reason"] == as_json(local_env, NONE_QUERY)["reason"]
