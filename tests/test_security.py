"""Security at the API edge: no path escapes, inert data, no leaked secrets, constant-time tokens.

(The web article page's escaping of a `<script>` article is tested in
test_web.py::test_xss_article_page_is_escaped and, in a real browser,
test_xss_article_is_inert_on_article_page_and_in_cards; the bots' rendering in
test_bots.py::test_formatter_renders_hostile_article_text_inert.)
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from urllib.parse import quote, unquote, urlencode

import httpx
import pytest

from conftest import ADMIN_TOKEN

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

# -- raw ASGI requests: the path exactly as a client could put it on the wire -----------


def raw_request(app, method: str, raw_path: bytes, headers: dict | None = None, body: bytes = b"") -> tuple[int, bytes]:
    """Send one request to the ASGI app without any client-side URL normalization.

    The scope's `path` is decoded the way uvicorn does it (`unquote(raw_path.decode("ascii"))`).
    """
    path_bytes, _, query = raw_path.partition(b"?")
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": unquote(path_bytes.decode("ascii")), "raw_path": path_bytes,
        "query_string": query, "root_path": "", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5555),
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
                   + [(b"content-length", str(len(body)).encode())],
    }
    sent = {"status": None, "body": b""}
    chunks = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]
        elif message["type"] == "http.response.body":
            sent["body"] += message.get("body", b"")

    asyncio.run(app(scope, receive, send))
    return sent["status"], sent["body"]


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != "ingest.lock"}


HOSTILE_IDS = [
    "..", "../..", "../../etc/passwd", "..%2F..%2Fetc%2Fpasswd", "%2E%2E%2F%2E%2E%2Fvictim", "%2e%2e",
    "/etc/passwd", "%2Fetc%2Fpasswd", "%2F%2Fetc%2Fpasswd", "..\\..\\victim", "..%5C..%5Cvictim",
    "a%00b", "victim%00.md", "%00", "a%0Ab", "nccl-p2p-hang%0A", "nccl-p2p-hang/..", "nccl-p2p-hang%2F..%2F..%2Fvictim",
    "x" * 129, "y" * 10_000, ".hidden", "-rf", "~root", "%252e%252e%252fvictim", "file:%2F%2F%2Fetc%2Fpasswd",
    "..%C0%AF..%C0%AFvictim", "%C0%AE%C0%AE", "\u202e..", "con.", "a..b",
]


@pytest.fixture(scope="module")
def world(tmp_path_factory, tokenizer):
    """One index for the read-only probes, and a file beside it that no API call may touch."""
    import shutil

    from fastapi.testclient import TestClient

    from api.main import create_app
    from api.settings import ApiSettings
    from conftest import FIXTURE_CORPUS
    from kb.config import Settings
    from kb.service import KnowledgeBase

    root = tmp_path_factory.mktemp("escape")
    shutil.copytree(FIXTURE_CORPUS, root / "corpus")
    kb = KnowledgeBase(Settings(data_dir=root / "data", embed_model="hash"), tokenizer=tokenizer)
    assert not kb.ingest([root / "corpus"]).failed
    (root / "victim.md").write_text("---\nid: victim\n---\n\nSECRET-VICTIM-CONTENT\n")
    app = create_app(ApiSettings(data_dir=root / "data", embed_model="hash", admin_token=ADMIN_TOKEN), kb=kb)
    with TestClient(app) as client:
        yield {"root": root, "kb": kb, "app": app, "client": client}


@pytest.mark.parametrize("article_id", HOSTILE_IDS)
def test_hostile_ids_cannot_escape_the_data_dir(world, article_id):
    app, kb, root = world["app"], world["kb"], world["root"]
    before = files_under(root)
    for method, headers in (("GET", {}), ("DELETE", AUTH), ("DELETE", {})):
        status, body = raw_request(app, method, quote(f"/v1/articles/{article_id}", safe="/%").encode(), headers)
        assert status in (401, 404, 405), (method, article_id, status, body[:200])
        assert b"SECRET-VICTIM-CONTENT" not in body and b"root:" not in body
    # the web page takes ids too (Starlette's route regex ends in `$`, so a trailing %0A still
    # names the same article: that page is fine, anything else must be a 404)
    status, body = raw_request(app, "GET", quote(f"/articles/{article_id}", safe="/%").encode())
    assert b"SECRET-VICTIM-CONTENT" not in body
    assert status == 404 or (status == 200 and unquote(article_id).rstrip("\n") in kb.searcher().list_ids()), status
    assert files_under(root) == before  # nothing written, nothing deleted, victim intact


@pytest.mark.parametrize("bad_id", ["../../victim", "/tmp/victim", "..", "a/b", "a\\b", "a\x00b", "x" * 129, ".x", "a..b",
                                    "victim\n---\nid: evil", "C:\\victim", "%2e%2e%2fvictim"])
def test_hostile_ids_cannot_be_written(world, bad_id):
    client, root = world["client"], world["root"]
    before = files_under(root)
    as_markdown = f"---\nid: {json.dumps(bad_id)}\ntitle: t\n---\n\n## Fix\n\nx\n"
    r = client.post("/v1/articles", content=as_markdown.encode(), headers={"content-type": "text/markdown", **AUTH})
    assert r.status_code == 422 and "id" in r.json()["detail"], (bad_id, r.status_code, r.text[:200])
    r = client.post("/v1/articles", json={"id": bad_id, "title": "t", "body": "## Fix\n\nx\n"}, headers=AUTH)
    assert r.status_code == 422, (bad_id, r.status_code, r.text[:200])
    assert files_under(root) == before


def test_written_articles_stay_inside_the_data_dir(client, kb, tmp_path):
    r = client.post("/v1/articles", json={"id": "a.b-c_d", "title": "t", "body": "## Fix\n\nx\n"}, headers=AUTH)
    assert r.status_code == 201
    written = kb.data.articles_dir / "a.b-c_d.md"
    assert kb.get_article("a.b-c_d")["title"] == "t"
    assert written.exists() and written.resolve().is_relative_to(kb.data.root.resolve())
    # deleting "a" must not touch "a.b-c_d.md" (file names are matched by exact stem)
    r = client.post("/v1/articles", json={"id": "a", "title": "t", "body": "## Fix\n\ny\n"}, headers=AUTH)
    assert r.status_code == 201
    assert client.delete("/v1/articles/a", headers=AUTH).status_code == 204
    assert written.exists() and client.get("/v1/articles/a.b-c_d").status_code == 200


# -- data stays data -----------------------------------------------------------------

XSS = """---
id: xss-api
title: "<script>alert('t')</script> NCCL hang"
lang: en
---

## Error

NCCL watchdog caught collective operation timeout <img src=x onerror=alert(1)>

## Root cause

<script>alert('cause')</script> the P2P path hangs.

## Fix

<script>alert('fix')</script> set [NCCL_P2P_DISABLE](javascript:alert(1))=1.
"""


def test_markdown_comes_back_as_plain_json_strings(client):
    assert client.post("/v1/articles", content=XSS, headers={"content-type": "text/markdown", **AUTH}).status_code == 201
    r = client.post("/v1/search", json={"query": "<script>alert('fix')</script> NCCL watchdog caught collective operation timeout"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    hit = next(h for h in r.json()["results"] if h["article_id"] == "xss-api")
    for key in ("title", "root_cause", "fix", "snippet"):
        assert isinstance(hit[key], str), key
    # verbatim text, neither rendered to HTML nor entity-escaped: the client decides how to show it
    assert "<script>alert('fix')</script>" in hit["fix"] and "&lt;" not in hit["fix"]
    assert hit["title"].startswith("<script>")
    article = client.get("/v1/articles/xss-api")
    assert article.headers["content-type"] == "application/json" and "<img src=x" in article.json()["body"]


# -- secrets never in logs or error bodies ------------------------------------------------

SECRETS = dict(
    admin_token="adm1n-S3CRET-token-4f2b9c",
    slack_signing_secret="slack-S3CRET-signing-77aa",
    slack_bot_token="xoxb-S3CRET-bot-token-1234",
    mattermost_token="mm-S3CRET-token-9911",
    dingtalk_app_secret="ding-S3CRET-app-secret-55",
    feishu_app_id="cli_S3CRET_app",
    feishu_app_secret="feishu-S3CRET-app-secret",
    feishu_verification_token="feishu-S3CRET-verify",
    feishu_encrypt_key="feishu-S3CRET-encrypt-key",
    wecom_corp_id="ww-S3CRET-corp",
    wecom_token="wecomS3CRETtoken",
    wecom_aes_key="S3CRETabcdefghijklmnopqrstuvwxyz0123456789A",
    wecom_secret="wecom-S3CRET-secret",
    wecom_agent_id="1000002",
)
CLOSED = "http://127.0.0.1:9"  # outbound calls fail fast (and get logged)


def _bad_requests(c, kb):
    """Requests that fail in every way we can think of; each returns a response."""
    tok = SECRETS["admin_token"]
    md = {"content-type": "text/markdown"}
    yield c.post("/v1/articles", content="---\nid: x\n---\n\nb\n", headers={**md, "Authorization": f"Bearer {tok[:-1]}"})
    yield c.post("/v1/articles", content="---\nid: x\n---\n\nb\n", headers={**md, "Authorization": f"Bearer {tok}x"})
    yield c.post("/v1/articles", content="---\nid: x\n---\n\nb\n", headers={**md, "Authorization": f"Basic {tok}"})
    yield c.post("/v1/articles", content="---\nid: x\n---\n\nb\n", headers={**md, "Authorization": tok})
    yield c.delete("/v1/articles/nccl-p2p-hang", headers={"Authorization": f"Bearer {tok.upper()}"})
    auth = {"Authorization": f"Bearer {tok}"}
    yield c.post("/v1/articles", content=b"---\nid: [broken\n---\nx\n", headers={**md, **auth})
    yield c.post("/v1/articles", content=b"\xff\xfe not utf-8", headers={**md, **auth})
    yield c.post("/v1/articles", content=b'{"id": 3', headers={"content-type": "application/json", **auth})
    yield c.post("/v1/articles", json={"id": ["x"], "body": {"a": 1}}, headers=auth)
    yield c.post("/v1/search", content=b'{"query": ', headers={"content-type": "application/json"})
    yield c.post("/v1/search", json={"query": "x" * 70_000})
    yield c.post("/v1/search", content=b"a" * (3 * 1024 * 1024), headers={"content-type": "application/json"})
    yield c.get("/v1/articles/..%2F..%2Fetc%2Fpasswd")
    # bots: bad signatures and tokens, including near-misses of the real secret
    yield c.post("/bots/slack/commands", content=b"text=hi", headers={"x-slack-request-timestamp": str(int(time.time())),
                                                                     "x-slack-signature": "v0=" + "0" * 64})
    yield c.post("/bots/slack/events", json={"type": "url_verification", "challenge": "c"})
    yield c.post("/bots/mattermost", content=urlencode({"token": SECRETS["mattermost_token"][:-1], "text": "x"}).encode(),
                 headers={"content-type": "application/x-www-form-urlencoded"})
    yield c.post("/bots/dingtalk", json={"text": {"content": "x"}}, headers={"timestamp": "1", "sign": "bad"})
    yield c.post("/bots/feishu", json={"token": SECRETS["feishu_verification_token"] + "x", "type": "url_verification",
                                       "challenge": "c"})
    yield c.post("/bots/feishu", json={"encrypt": "not-base64!"})
    yield c.get("/bots/wecom", params={"msg_signature": "x", "timestamp": "1", "nonce": "2", "echostr": "e"})
    yield c.post("/bots/wecom", params={"msg_signature": "x", "timestamp": "1", "nonce": "2"},
                 content=b"<!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]><xml>&e;</xml>")
    # a validly signed Slack command: its answer goes to a closed port, which fails in the background (logged)
    from api.bots.slack import sign

    body = urlencode({"text": "CUDA out of memory", "response_url": CLOSED + "/hook", "user_id": "U1"}).encode()
    ts = str(int(time.time()))
    yield c.post("/bots/slack/commands", content=body, headers={
        "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": ts,
        "x-slack-signature": sign(SECRETS["slack_signing_secret"], ts, body)})
    # an internal error
    original = kb.search
    kb.search = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("index exploded"))
    try:
        yield c.post("/v1/search", json={"query": "CUDA out of memory"})
    finally:
        kb.search = original


def test_secrets_never_in_logs_or_error_bodies(kb, api_settings, caplog, capfd):
    from fastapi.testclient import TestClient

    from api.main import create_app

    caplog.set_level(logging.DEBUG)
    settings = api_settings.model_copy(update={**SECRETS, "slack_api_base": CLOSED, "feishu_api_base": CLOSED,
                                               "wecom_api_base": CLOSED})
    seen = []
    with TestClient(create_app(settings, kb=kb), raise_server_exceptions=False) as c:
        for r in _bad_requests(c, kb):
            seen.append(r)
            text = r.text + json.dumps(dict(r.headers))
            for name, secret in SECRETS.items():
                if name == "wecom_agent_id":
                    continue
                assert secret not in text, f"{r.request.method} {r.request.url.path} -> {r.status_code} leaks {name}"
    statuses = [r.status_code for r in seen]
    assert 500 in statuses and 401 in statuses and 413 in statuses and 422 in statuses, statuses
    assert "index exploded" in caplog.text  # the internal error is logged, with its details ...
    out, err = capfd.readouterr()
    logged = caplog.text + out + err
    for name, secret in SECRETS.items():
        if name != "wecom_agent_id":
            assert secret not in logged, f"{name} appears in the logs"
    assert "index exploded" not in "".join(r.text for r in seen)  # ... but not sent to the client


@pytest.mark.slow
def test_secrets_never_in_a_real_servers_log(kb, settings, tmp_path):
    from test_reliability import running_server

    env = {f"KB_{k.upper()}": v for k, v in SECRETS.items() if k != "admin_token"}
    with running_server(settings.data_dir, tmp_path / "serve.log", KB_SLACK_API_BASE=CLOSED, **env) as server:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            c.post("/v1/articles", content="x", headers={"Authorization": f"Bearer {ADMIN_TOKEN}x"})
            c.post("/v1/articles", content="---\nid: [x\n---\n", headers={"Authorization": f"Bearer {ADMIN_TOKEN}",
                                                                           "content-type": "text/markdown"})
            c.post("/v1/search", content=b"{", headers={"content-type": "application/json"})
            c.post("/bots/mattermost", content=b"token=nope&text=x")
            c.get("/bots/wecom", params={"msg_signature": "x", "timestamp": "1", "nonce": "2", "echostr": "e"})
    log = (tmp_path / "serve.log").read_text()
    assert "POST /v1/articles" in log  # the access log is there ...
    for name, secret in {**SECRETS, "admin_token": ADMIN_TOKEN}.items():
        if name != "wecom_agent_id":
            assert secret not in log, f"{name} appears in the server log"  # ... without any secret


# -- the admin token is compared in constant time ---------------------------------------


def test_admin_token_is_checked_with_compare_digest(client, monkeypatch):
    import api.deps

    calls = []
    real = api.deps.hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(api.deps.hmac, "compare_digest", spy)
    r = client.post("/v1/articles", json={"id": "spy-1", "body": "## Fix\n\nx\n"}, headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401
    assert calls == [(b"wrong", ADMIN_TOKEN.encode())]
    r = client.post("/v1/articles", json={"id": "spy-1", "body": "## Fix\n\nx\n"}, headers=AUTH)
    assert r.status_code == 201 and calls[-1] == (ADMIN_TOKEN.encode(), ADMIN_TOKEN.encode())

    # the decision is compare_digest's alone: no `==` short-cut before or after it
    monkeypatch.setattr(api.deps.hmac, "compare_digest", lambda a, b: True)
    assert client.delete("/v1/articles/spy-1", headers={"Authorization": "Bearer anything"}).status_code == 204
    monkeypatch.setattr(api.deps.hmac, "compare_digest", lambda a, b: False)
    assert client.get("/v1/articles/nccl-p2p-hang").status_code == 200  # reads need no token
    assert client.delete("/v1/articles/nccl-p2p-hang", headers=AUTH).status_code == 401
