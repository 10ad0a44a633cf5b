"""Chat-ops bots: each platform's verification, payloads and replies, and the shared formatter.

Signatures and ciphertexts are computed here with each platform's documented algorithm
(independently of api/bots), plus the platforms' own published test vectors. Outbound
replies go to a tiny real HTTP server on 127.0.0.1 that records what it receives.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from Crypto.Cipher import AES
from fastapi.testclient import TestClient

from api.bots import dingtalk as dingtalk_mod
from api.bots import feishu as feishu_mod
from api.bots import format as fmt
from api.bots import mattermost as mattermost_mod
from api.bots import slack as slack_mod
from api.bots import wecom as wecom_mod
from api.main import create_app

NCCL_ERROR = ("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
              "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.")
NCCL_TITLE = "NCCL all_reduce hangs on PCIe machines until the watchdog fires"
NCCL_FIX = "NCCL_P2P_DISABLE=1"
ZERO3_QUERY = "训练卡住了，日志一直刷 Invalidate trace cache @ step 12: expected module 3, but got module 7"
ZERO3_TITLE = "ZeRO-3 训练停滞：Invalidate trace cache 警告刷屏"
ZERO3_FIX = "use_vllm: true"
OFF_TOPIC = "how do I bake a chocolate cake for my grandmother"
# Errors from another ecosystem: the fixture corpus has no article for them (the core's verdict is `none`).
NONE_EN = "npm ERR! code ERESOLVE unable to resolve dependency tree"
NONE_ZH = "前端构建报错：npm ERR! code ERESOLVE unable to resolve dependency tree"
NONE_WORDS_EN = ("No article in the knowledge base covers this error", "Related, not a match",
                 "write a Markdown article (see corpus/AUTHORING.md) and run `kb ingest FILE`", "/v1/articles")
NONE_WORDS_ZH = ("知识库里没有针对这个报错的文章", "相关但不是同一问题", "kb ingest 文件", "/v1/articles")


def core_verdict_none(kb, query: str) -> str:
    """The core's own verdict for `query` must be `none` (the bots only render it); returns its reason."""
    response = kb.search(query, top_k=3)
    assert response.verdict == "none" and not response.confident, (query, response.verdict, response.reason)
    return response.reason


def assert_none_wording(text: str, reason: str, lang: str = "en") -> None:
    for words in (NONE_WORDS_ZH if lang == "zh" else NONE_WORDS_EN):
        assert words in text, (words, text)
    assert reason in text
    for old in ("None of the articles clearly matches", "Confidence: high", "Maybe:"):
        assert old not in text


# -- a fake platform on loopback ------------------------------------------------


class FakePlatform:
    """Records every request; answers like Slack / Feishu / WeCom would."""

    def __init__(self):
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                url = urlsplit(self.path)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with fake._lock:
                    fake.requests.append({
                        "method": self.command, "path": url.path,
                        "query": {k: v[0] for k, v in parse_qs(url.query).items()},
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "json": body,
                    })
                if url.path.endswith("/auth/v3/tenant_access_token/internal"):
                    reply = {"code": 0, "msg": "ok", "tenant_access_token": "t-fake-tenant-token", "expire": 7200}
                elif url.path.endswith("/gettoken"):
                    reply = {"errcode": 0, "errmsg": "ok", "access_token": "wecom-fake-token", "expires_in": 7200}
                elif url.path.endswith("/message/send"):
                    reply = {"errcode": 0, "errmsg": "ok", "msgid": "m1"}
                elif url.path.endswith("/im/v1/messages"):
                    reply = {"code": 0, "msg": "success", "data": {"message_id": "om_reply"}}
                else:
                    reply = {"ok": True}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _handle

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def matching(self, path_suffix: str) -> list[dict]:
        with self._lock:
            return [r for r in self.requests if r["path"].endswith(path_suffix)]

    def wait_for(self, path_suffix: str, count: int = 1, timeout: float = 5.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.matching(path_suffix)
            if len(found) >= count:
                return found
            time.sleep(0.01)
        raise AssertionError(f"the fake platform got {len(self.matching(path_suffix))} requests to *{path_suffix}, "
                             f"expected {count}; all: {[r['path'] for r in self.requests]}")

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake(monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    server = FakePlatform()
    yield server
    server.close()


@pytest.fixture
def searches(kb, monkeypatch):
    """Every call the bots make to kb.search (signature failures must leave this empty)."""
    calls: list[str] = []
    real = kb.search

    def counting(query, top_k=5, **kw):
        calls.append(query)
        return real(query, top_k, **kw)

    monkeypatch.setattr(kb, "search", counting)
    return calls


@pytest.fixture
def make_client(kb, api_settings, searches):
    opened: list[TestClient] = []

    def make(**update) -> TestClient:
        client = TestClient(create_app(api_settings.model_copy(update=update), kb=kb))
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


def settle():
    """Give background tasks a moment (used only to prove that nothing more arrives)."""
    time.sleep(0.2)


# -- Slack --------------------------------------------------------------------

SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SLACK_TOKEN = "xoxb-test-bot-token"


def slack_headers(body: bytes, secret: str = SLACK_SECRET, ts: int | None = None, **extra) -> dict:
    ts = int(time.time()) if ts is None else ts
    base = f"v0:{ts}:".encode() + body
    sig = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": sig, **extra}


def slash_body(text: str, response_url: str) -> bytes:
    return urlencode({
        "token": "gIkuvaNzQIHg97ATvDxqgjtO", "team_id": "T0001", "team_domain": "example",
        "enterprise_id": "E0001", "enterprise_name": "Globular Construct Inc",
        "channel_id": "C2147483705", "channel_name": "test", "user_id": "U2147483697", "user_name": "Steve",
        "command": "/kb", "text": text, "response_url": response_url,
        "trigger_id": "13345224609.738474920.8088930838d88f008e0", "api_app_id": "A123456",
    }).encode()


def mention_event(text: str, event_id: str = "Ev0LAN670R", **event_extra) -> bytes:
    return json.dumps({
        "token": "ZZZZZZWSxiZZZ2yIvs3peJ", "team_id": "T061EG9R6", "api_app_id": "A0MDYCDME",
        "event": {"type": "app_mention", "user": "U061F7AUR", "text": text, "ts": "1515449522.000016",
                  "channel": "C0LAN2Q65", "event_ts": "1515449522000016", **event_extra},
        "type": "event_callback", "event_id": event_id, "event_time": 1515449522,
        "authed_users": ["U0LAN0Z89"],
    }).encode()


def test_slack_signature_matches_slacks_documented_example():
    body = (b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
            b"&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
            b"&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
            b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
    expected = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    assert slack_mod.sign(SLACK_SECRET, "1531420618", body) == expected
    slack_mod.verify(SLACK_SECRET, {"x-slack-request-timestamp": "1531420618", "x-slack-signature": expected},
                     body, now=1531420618 + 60)


def test_slack_off_without_secrets(make_client, searches):
    client = make_client()
    for path in ("/bots/slack/commands", "/bots/slack/events"):
        r = client.post(path, content=b"x=1", headers=slack_headers(b"x=1"))
        assert r.status_code == 404
        assert "KB_SLACK_SIGNING_SECRET" in r.json()["detail"]
    # The events endpoint also needs the bot token to answer.
    client = make_client(slack_signing_secret=SLACK_SECRET)
    body = json.dumps({"type": "url_verification", "challenge": "c"}).encode()
    r = client.post("/bots/slack/events", content=body, headers=slack_headers(body))
    assert r.status_code == 404 and "KB_SLACK_BOT_TOKEN" in r.json()["detail"]
    assert searches == []


def test_slack_url_verification(make_client):
    client = make_client(slack_signing_secret=SLACK_SECRET, slack_bot_token=SLACK_TOKEN)
    body = json.dumps({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
                       "type": "url_verification"}).encode()
    r = client.post("/bots/slack/events", content=body, headers=slack_headers(body))
    assert r.status_code == 200
    assert r.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}


@pytest.mark.parametrize("case", ["wrong_secret", "stale", "future", "missing_signature", "missing_timestamp", "tampered", "garbage"])
def test_slack_bad_signatures_are_refused_without_searching(make_client, fake, searches, case):
    client = make_client(slack_signing_secret=SLACK_SECRET, slack_bot_token=SLACK_TOKEN, slack_api_base=fake.url)
    body = slash_body(NCCL_ERROR, f"{fake.url}/commands/T0001/1/abc")
    headers = slack_headers(body)
    if case == "wrong_secret":
        headers = slack_headers(body, secret="not-the-secret")
    elif case == "stale":
        headers = slack_headers(body, ts=int(time.time()) - 6 * 60)
    elif case == "future":
        headers = slack_headers(body, ts=int(time.time()) + 6 * 60)
    elif case == "missing_signature":
        del headers["X-Slack-Signature"]
    elif case == "missing_timestamp":
        del headers["X-Slack-Request-Timestamp"]
    elif case == "tampered":
        body = body.replace(b"Watchdog", b"Watchcat")
    elif case == "garbage":
        headers["X-Slack-Signature"] = "v0=" + "0" * 64
    for path in ("/bots/slack/commands", "/bots/slack/events"):
        r = client.post(path, content=body, headers={**headers, "Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 401, (path, r.text)
        assert r.json()["detail"]
    settle()
    assert searches == []
    assert fake.requests == []


def test_slack_slash_command_acks_then_answers_via_response_url(make_client, fake, searches):
    client = make_client(slack_signing_secret=SLACK_SECRET, slack_api_base=fake.url,
                         public_url="https://kb.example.com")
    body = slash_body(NCCL_ERROR, f"{fake.url}/commands/T0001/1/abc")
    started = time.monotonic()
    r = client.post("/bots/slack/commands", content=body,
                    headers={**slack_headers(body), "Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 200
    assert r.json()["response_type"] == "ephemeral"
    assert "Searching" in r.json()["text"]
    assert time.monotonic() - started < 3
    (posted,) = fake.wait_for("/commands/T0001/1/abc")
    msg = posted["json"]
    assert posted["method"] == "POST"
    assert msg["response_type"] == "in_channel"
    assert NCCL_TITLE in msg["text"] and NCCL_FIX in msg["text"]
    assert "<https://kb.example.com/articles/nccl-p2p-hang|Full article>" in msg["text"]
    assert msg["blocks"][0]["type"] == "section" and NCCL_TITLE in msg["blocks"][0]["text"]["text"]
    assert searches == [NCCL_ERROR]


def test_slack_answer_has_feedback_buttons_and_a_signed_click_is_recorded(make_client, fake, kb):
    client = make_client(slack_signing_secret=SLACK_SECRET, slack_api_base=fake.url)
    body = slash_body(NCCL_ERROR, f"{fake.url}/commands/T0001/9/fb")
    assert client.post("/bots/slack/commands", content=body, headers=slack_headers(body)).status_code == 200
    (posted,) = fake.wait_for("/commands/T0001/9/fb")
    (buttons,) = [b for b in posted["json"]["blocks"] if b["type"] == "actions"]
    down = next(e for e in buttons["elements"] if e["action_id"] == "kb_not_helpful")
    vote = json.loads(down["value"])
    assert vote["a"] == "nccl-p2p-hang" and vote["s"]

    click = urlencode({"payload": json.dumps({
        "type": "block_actions", "user": {"id": "U2147483697"},
        "actions": [{"action_id": "kb_not_helpful", "block_id": "kb_feedback", "value": down["value"]}]})}).encode()
    forged = client.post("/bots/slack/actions", content=click, headers=slack_headers(click, secret="not-the-secret"))
    assert forged.status_code == 401
    assert not [r for r in kb.log.raw_rows() if "helpful" in r]  # a forged click records nothing
    signed = client.post("/bots/slack/actions", content=click, headers=slack_headers(click))
    assert signed.status_code == 200
    (gap,) = [g for g in kb.gaps() if "nccl-p2p-hang" in g.closest]
    assert gap.unhelpful == 1 and gap.doors == ["slack"]


def test_slack_none_verdict_says_no_article_and_how_to_add_one(make_client, fake, kb):
    reason = core_verdict_none(kb, NONE_EN)
    client = make_client(slack_signing_secret=SLACK_SECRET, slack_api_base=fake.url)
    body = slash_body(NONE_EN, f"{fake.url}/commands/T0001/2/def")
    r = client.post("/bots/slack/commands", content=body, headers=slack_headers(body))
    assert r.status_code == 200
    (posted,) = fake.wait_for("/commands/T0001/2/def")
    msg = posted["json"]
    assert msg["response_type"] == "ephemeral"  # not confident: only the asker sees it
    assert msg["text"].startswith(f"No article in the knowledge base covers this error ({reason}).")
    assert_none_wording(msg["text"], reason)
    assert all(b["type"] == "section" for b in msg["blocks"])
    assert "kb ingest FILE" in msg["blocks"][-1]["text"]["text"]


def test_slack_slash_command_empty_text_and_foreign_response_url(make_client, fake, searches):
    client = make_client(slack_signing_secret=SLACK_SECRET, slack_api_base=fake.url)
    body = slash_body("", f"{fake.url}/commands/x")
    r = client.post("/bots/slack/commands", content=body, headers=slack_headers(body))
    assert r.status_code == 200 and r.json()["response_type"] == "ephemeral"
    assert "Paste an error" in r.json()["text"]
    body = slash_body(NCCL_ERROR, "https://attacker.example.net/collect")
    r = client.post("/bots/slack/commands", content=body, headers=slack_headers(body))
    assert r.status_code == 400
    settle()
    assert searches == [] and fake.requests == []


def test_slack_app_mention_answered_in_thread_once(make_client, fake, searches):
    client = make_client(slack_signing_secret=SLACK_SECRET, slack_bot_token=SLACK_TOKEN, slack_api_base=fake.url)
    text = "<@U0LAN0Z89> " + NCCL_ERROR.replace("<", "&lt;").replace(">", "&gt;")
    body = mention_event(text)
    r = client.post("/bots/slack/events", content=body, headers=slack_headers(body))
    assert r.status_code == 200
    (posted,) = fake.wait_for("/chat.postMessage")
    assert posted["headers"]["authorization"] == f"Bearer {SLACK_TOKEN}"
    msg = posted["json"]
    assert msg["channel"] == "C0LAN2Q65" and msg["thread_ts"] == "1515449522.000016"
    assert NCCL_TITLE in msg["text"] and NCCL_FIX in msg["text"]
    assert msg["blocks"]
    assert searches == [NCCL_ERROR]  # mention removed, entities decoded

    # Slack redelivers (slow ack): acknowledged, not answered again.
    retry = client.post("/bots/slack/events", content=body,
                        headers=slack_headers(body, **{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}))
    assert retry.status_code == 200
    # Same event_id again without the retry header: still answered only once.
    again = client.post("/bots/slack/events", content=body, headers=slack_headers(body))
    assert again.status_code == 200
    settle()
    assert len(fake.matching("/chat.postMessage")) == 1
    assert searches == [NCCL_ERROR]

    # A retry whose first delivery never reached kb (connection_failed) is answered, once.
    lost = mention_event("<@U0LAN0Z89> " + ZERO3_QUERY, event_id="Ev0LOST")
    for n in ("1", "2"):
        r = client.post("/bots/slack/events", content=lost,
                        headers=slack_headers(lost, **{"X-Slack-Retry-Num": n, "X-Slack-Retry-Reason": "connection_failed"}))
        assert r.status_code == 200
    fake.wait_for("/chat.postMessage", count=2)
    settle()
    assert len(fake.matching("/chat.postMessage")) == 2
    assert searches == [NCCL_ERROR, ZERO3_QUERY]


def test_a_redelivery_after_a_restart_is_not_answered_again(make_client, fake, searches):
    # Slack retries for minutes: a restarted server (or a second server process over the same
    # data dir) must still know the event. Two app instances over one data dir stand in for both.
    settings = dict(slack_signing_secret=SLACK_SECRET, slack_bot_token=SLACK_TOKEN, slack_api_base=fake.url)
    first, second = make_client(**settings), make_client(**settings)
    body = mention_event("<@U0LAN0Z89> " + ZERO3_QUERY, event_id="Ev0WORKERS")
    assert first.post("/bots/slack/events", content=body, headers=slack_headers(body)).status_code == 200
    fake.wait_for("/chat.postMessage")
    retry = second.post("/bots/slack/events", content=body,
                        headers=slack_headers(body, **{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}))
    assert retry.status_code == 200
    settle()
    assert len(fake.matching("/chat.postMessage")) == 1 and searches == [ZERO3_QUERY]


def test_seen_events_fall_back_to_memory_when_the_data_dir_is_read_only(tmp_path, caplog):
    from api.bots.common import Dedupe

    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    seen = Dedupe(blocked / "bots" / "slack-seen.sqlite")
    assert seen.first_time("Ev1") and not seen.first_time("Ev1") and seen.first_time("Ev2")
    assert "remembering them per process" in caplog.text


def test_slack_ignores_bot_messages_and_other_events(make_client, fake, searches):
    client = make_client(slack_signing_secret=SLACK_SECRET, slack_bot_token=SLACK_TOKEN, slack_api_base=fake.url)
    for body in (mention_event(NCCL_ERROR, event_id="Ev1", bot_id="B123"),
                 json.dumps({"type": "event_callback", "event_id": "Ev2",
                             "event": {"type": "reaction_added", "user": "U1"}}).encode()):
        r = client.post("/bots/slack/events", content=body, headers=slack_headers(body))
        assert r.status_code == 200
    settle()
    assert searches == [] and fake.requests == []


def test_slack_chinese_mention_gets_chinese_answer(make_client, fake):
    client = make_client(slack_signing_secret=SLACK_SECRET, slack_bot_token=SLACK_TOKEN, slack_api_base=fake.url)
    body = mention_event("<@U0LAN0Z89> " + ZERO3_QUERY, event_id="EvZH")
    client.post("/bots/slack/events", content=body, headers=slack_headers(body))
    (posted,) = fake.wait_for("/chat.postMessage")
    assert ZERO3_TITLE in posted["json"]["text"] and ZERO3_FIX in posted["json"]["text"]
    assert "根本原因" in posted["json"]["text"] and "解决办法" in posted["json"]["text"]


# -- Mattermost ---------------------------------------------------------------

MM_TOKEN = "xr3j5x3p4pfk7kk6ck7b4e6ghh"


def mm_body(text: str, token: str | None = MM_TOKEN) -> bytes:
    fields = {"channel_id": "fukxanjgjbnp7ng383at53k1sy", "channel_name": "town-square", "command": "/kb",
              "response_url": "https://mm.example.com/hooks/commands/abc", "team_domain": "someteam",
              "team_id": "tpczx6z5afyyfbkd3drgqqp3pc", "text": text, "trigger_id": "xyz",
              "user_id": "c3a4cqe3dfy6dgopqt8ai3hydh", "user_name": "somename"}
    if token is not None:
        fields["token"] = token
    return urlencode(fields).encode()


def test_mattermost(make_client, searches):
    assert make_client().post("/bots/mattermost", content=mm_body(NCCL_ERROR)).status_code == 404
    client = make_client(mattermost_token=MM_TOKEN, public_url="https://kb.example.com/")
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for body in (mm_body(NCCL_ERROR, token="wrong-token"), mm_body(NCCL_ERROR, token=None), mm_body(NCCL_ERROR, token="")):
        r = client.post("/bots/mattermost", content=body, headers=form)
        assert r.status_code == 401 and r.json()["detail"]
    assert searches == []

    r = client.post("/bots/mattermost", content=mm_body(NCCL_ERROR), headers=form)
    assert r.status_code == 200
    assert r.json()["response_type"] == "in_channel"
    assert NCCL_TITLE in r.json()["text"] and NCCL_FIX in r.json()["text"]
    assert "[Full article](https://kb.example.com/articles/nccl-p2p-hang)" in r.json()["text"]

    # The token may also come as `Authorization: Token …` (Mattermost sends both).
    r = client.post("/bots/mattermost", content=mm_body(OFF_TOPIC, token=None),
                    headers={**form, "Authorization": f"Token {MM_TOKEN}"})
    assert r.status_code == 200
    assert r.json()["response_type"] == "ephemeral"
    assert "No article in the knowledge base covers this error" in r.json()["text"]
    assert searches == [NCCL_ERROR, OFF_TOPIC]


def test_chat_answers_without_button_callbacks_carry_signed_vote_links(make_client, kb):
    client = make_client(mattermost_token=MM_TOKEN, public_url="https://kb.example.com/")
    r = client.post("/bots/mattermost", content=mm_body(NCCL_ERROR), headers={"Content-Type": "application/x-www-form-urlencoded"})
    text = r.json()["text"]
    (down,) = re.findall(r"\[👎\]\((https://kb\.example\.com/vote\?[^)]+)\)", text)
    assert "Did it help?" in text and "[👍](https://kb.example.com/vote?" in text
    query = dict(parse_qs(urlsplit(down).query, keep_blank_values=True))
    fields = {k: v[0] for k, v in query.items()}
    assert fields["a"] == "nccl-p2p-hang" and fields["h"] == "0"

    page = client.get("/vote", params=fields)  # what a link preview fetches: a page, no vote
    assert page.status_code == 200 and 'action="/vote"' in page.text
    assert not kb.gaps()
    forged = client.post("/vote", data={**fields, "h": "1"})  # the signature covers the vote itself
    assert forged.status_code == 403 and not kb.gaps()
    recorded = client.post("/vote", data=fields)
    assert recorded.status_code == 200 and "recorded" in recorded.text
    (gap,) = kb.gaps()
    assert gap.unhelpful == 1 and gap.doors == ["mattermost"]


def test_mattermost_none_verdict_says_no_article_and_how_to_add_one(make_client, kb):
    reason = core_verdict_none(kb, NONE_EN)
    client = make_client(mattermost_token=MM_TOKEN, public_url="https://kb.example.com/")
    r = client.post("/bots/mattermost", content=mm_body(NONE_EN), headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 200
    assert r.json()["response_type"] == "ephemeral"
    text = r.json()["text"]
    assert text.startswith(f"No article in the knowledge base covers this error ({reason}).")
    assert_none_wording(text, reason)
    assert "1. Related, not a match: **" in text and "(Confidence: " in text
    assert "[Full article](https://kb.example.com/articles/" in text  # the related articles stay one click away


# -- DingTalk -----------------------------------------------------------------

DT_SECRET = "this-is-the-dingtalk-app-secret-0123456789"


def dt_headers(secret: str = DT_SECRET, ts_ms: int | None = None) -> dict:
    ts = str(int(time.time() * 1000) if ts_ms is None else ts_ms)
    sign = base64.b64encode(hmac.new(secret.encode(), f"{ts}\n{secret}".encode(), hashlib.sha256).digest()).decode()
    return {"timestamp": ts, "sign": sign, "Content-Type": "application/json; charset=utf-8"}


def dt_body(content: str) -> bytes:
    return json.dumps({
        "conversationId": "cidMGEr+xxxx==", "atUsers": [{"dingtalkId": "$:LWCP_v1:$bot"}],
        "chatbotCorpId": "dinge8a565xxxx", "chatbotUserId": "$:LWCP_v1:$Cxxxxx", "msgId": "msg0xxxxx",
        "senderNick": "杨xx", "isAdmin": True, "senderStaffId": "user123", "sessionWebhookExpiredTime": 1613635652738,
        "createAt": 1613630252678, "senderCorpId": "dinge8a565xxxx", "conversationType": "2",
        "senderId": "$:LWCP_v1:$Ff09GIxxxxx", "conversationTitle": "机器人测试-TEST", "isInAtList": True,
        "sessionWebhook": "https://oapi.dingtalk.com/robot/sendBySession?session=xxxxx",
        "text": {"content": " " + content}, "msgtype": "text",
    }, ensure_ascii=False).encode()


def test_dingtalk_answers_in_the_response(make_client, searches):
    assert make_client().post("/bots/dingtalk", content=dt_body(ZERO3_QUERY), headers=dt_headers()).status_code == 404
    client = make_client(dingtalk_app_secret=DT_SECRET)
    r = client.post("/bots/dingtalk", content=dt_body(ZERO3_QUERY), headers=dt_headers())
    assert r.status_code == 200
    reply = r.json()
    assert reply["msgtype"] == "markdown"
    assert reply["markdown"]["title"] == ZERO3_TITLE
    assert ZERO3_TITLE in reply["markdown"]["text"] and ZERO3_FIX in reply["markdown"]["text"]
    assert "根本原因" in reply["markdown"]["text"]
    assert "/articles/zero3-trace-cache" in reply["markdown"]["text"]  # relative: no KB_PUBLIC_URL set
    assert searches == [ZERO3_QUERY]


def test_dingtalk_answer_is_an_action_card_with_signed_vote_buttons(make_client, kb):
    client = make_client(dingtalk_app_secret=DT_SECRET, public_url="https://kb.example.com")
    reply = client.post("/bots/dingtalk", content=dt_body(ZERO3_QUERY), headers=dt_headers()).json()
    assert reply["msgtype"] == "actionCard"
    card = reply["actionCard"]
    assert card["title"] == ZERO3_TITLE and ZERO3_FIX in card["text"] and "/vote?" not in card["text"]
    up, down = card["btns"]
    assert up["actionURL"].startswith("https://kb.example.com/vote?") and "h=1" in up["actionURL"]
    fields = {k: v[0] for k, v in parse_qs(urlsplit(down["actionURL"]).query).items()}
    assert client.post("/vote", data=fields).status_code == 200
    (gap,) = kb.gaps()
    assert gap.unhelpful == 1 and gap.doors == ["dingtalk"]


def test_dingtalk_none_verdict_in_chinese(make_client, kb):
    reason = core_verdict_none(kb, NONE_ZH)
    client = make_client(dingtalk_app_secret=DT_SECRET)
    r = client.post("/bots/dingtalk", content=dt_body(NONE_ZH), headers=dt_headers())
    assert r.status_code == 200
    reply = r.json()
    assert reply["msgtype"] == "markdown"
    assert reply["markdown"]["title"].startswith("知识库里没有针对这个报错的文章")
    assert reply["markdown"]["text"].startswith(f"知识库里没有针对这个报错的文章（{reason}）。")
    assert_none_wording(reply["markdown"]["text"], reason, "zh")


@pytest.mark.parametrize("case", ["wrong_secret", "stale", "future", "missing_sign", "missing_timestamp", "bad_timestamp"])
def test_dingtalk_bad_signatures_are_refused_without_searching(make_client, searches, case):
    client = make_client(dingtalk_app_secret=DT_SECRET)
    headers = dt_headers()
    if case == "wrong_secret":
        headers = dt_headers(secret="another-secret")
    elif case == "stale":
        headers = dt_headers(ts_ms=int(time.time() * 1000) - 61 * 60 * 1000)
    elif case == "future":
        headers = dt_headers(ts_ms=int(time.time() * 1000) + 61 * 60 * 1000)
    elif case == "missing_sign":
        del headers["sign"]
    elif case == "missing_timestamp":
        del headers["timestamp"]
    elif case == "bad_timestamp":
        headers["timestamp"] = "yesterday"
    r = client.post("/bots/dingtalk", content=dt_body(NCCL_ERROR), headers=headers)
    assert r.status_code == 401 and r.json()["detail"]
    assert searches == []


# -- Feishu / Lark ------------------------------------------------------------

FS_APP_ID, FS_APP_SECRET = "cli_9f5343c580712544", "feishu-app-secret-value"
FS_VTOKEN = "v-token-JdYzdAWVpCjWPA1PqQD7Xb"
FS_ENCRYPT_KEY = "kb-feishu-encrypt-key"


def feishu_encrypt(key: str, plaintext: str, iv: bytes = bytes(range(16))) -> str:
    """Feishu's scheme: AES-256-CBC, key = SHA-256(encrypt key), base64(IV + ciphertext), PKCS#7."""
    data = plaintext.encode()
    pad = 16 - len(data) % 16
    data += bytes([pad]) * pad
    cipher = AES.new(hashlib.sha256(key.encode()).digest(), AES.MODE_CBC, iv)
    return base64.b64encode(iv + cipher.encrypt(data)).decode()


def feishu_headers(body: bytes, key: str = FS_ENCRYPT_KEY, ts: str | None = None, nonce: str = "13341241") -> dict:
    ts = ts or str(int(time.time()))
    sig = hashlib.sha256((ts + nonce + key).encode() + body).hexdigest()
    return {"X-Lark-Request-Timestamp": ts, "X-Lark-Request-Nonce": nonce, "X-Lark-Signature": sig,
            "Content-Type": "application/json"}


def feishu_message_event(text: str, event_id: str = "5e3702a84e847582be8db7fb73283c02", token: str = FS_VTOKEN) -> dict:
    return {
        "schema": "2.0",
        "header": {"event_id": event_id, "token": token, "create_time": "1608725989000",
                   "event_type": "im.message.receive_v1", "tenant_key": "2ca1d211f64f6438", "app_id": FS_APP_ID},
        "event": {
            "sender": {"sender_id": {"union_id": "on_8ed6aa67826108097d9ee143816345", "user_id": "e33ggbyz",
                                     "open_id": "ou_84aad35d084aa403a838cf73ee18467"},
                       "sender_type": "user", "tenant_key": "736588c9260f175e"},
            "message": {"message_id": "om_5ce6d572455d361153b7cb51da133945", "root_id": "", "parent_id": "",
                        "create_time": "1609073151345", "chat_id": "oc_5ce6d572455d361153b7xx51da133945",
                        "chat_type": "group", "message_type": "text",
                        "content": json.dumps({"text": "@_user_1 " + text}, ensure_ascii=False),
                        "mentions": [{"key": "@_user_1", "id": {"union_id": "on_x", "user_id": "", "open_id": "ou_bot"},
                                      "name": "kb", "tenant_key": "736588c9260f175e"}]},
        },
    }


def feishu_settings(fake, encrypt_key: str | None = FS_ENCRYPT_KEY) -> dict:
    return dict(feishu_app_id=FS_APP_ID, feishu_app_secret=FS_APP_SECRET, feishu_verification_token=FS_VTOKEN,
                feishu_encrypt_key=encrypt_key, feishu_api_base=fake.url)


def feishu_posts(fake, count: int = 1) -> list[dict]:
    """The answers kb sent (msg_type post), waiting for `count` of them; 👍/👎 cards are separate messages."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        posts = [r for r in fake.matching("/im/v1/messages") if r["json"].get("msg_type") == "post"]
        if len(posts) >= count:
            return posts
        time.sleep(0.01)
    raise AssertionError(f"expected {count} post message(s), got {len(posts)}")


def test_feishu_decrypt_matches_feishus_documented_example():
    assert feishu_mod.decrypt("test key", "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=") == "hello world"
    # and our test-side encryption round-trips through the bot's decryption
    assert feishu_mod.decrypt(FS_ENCRYPT_KEY, feishu_encrypt(FS_ENCRYPT_KEY, '{"a": "飞书"}')) == '{"a": "飞书"}'


def test_feishu_off_without_secrets(make_client, searches):
    r = make_client().post("/bots/feishu", json={"type": "url_verification", "challenge": "c", "token": FS_VTOKEN})
    assert r.status_code == 404 and "KB_FEISHU_APP_ID" in r.json()["detail"]


def test_feishu_url_verification_plain_and_encrypted(make_client, fake, searches):
    plain = make_client(**feishu_settings(fake, encrypt_key=None))
    challenge = {"challenge": "ajls384kdjx98XX", "token": FS_VTOKEN, "type": "url_verification"}
    r = plain.post("/bots/feishu", json=challenge)
    assert r.status_code == 200 and r.json() == {"challenge": "ajls384kdjx98XX"}
    r = plain.post("/bots/feishu", json={**challenge, "token": "wrong"})
    assert r.status_code == 401

    enc = make_client(**feishu_settings(fake))
    body = json.dumps({"encrypt": feishu_encrypt(FS_ENCRYPT_KEY, json.dumps(challenge))}).encode()
    r = enc.post("/bots/feishu", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json() == {"challenge": "ajls384kdjx98XX"}
    r = enc.post("/bots/feishu", content=body, headers=feishu_headers(body))
    assert r.status_code == 200 and r.json() == {"challenge": "ajls384kdjx98XX"}
    # a signature that is present must be right, even on the challenge
    r = enc.post("/bots/feishu", content=body, headers=feishu_headers(body, key="other"))
    assert r.status_code == 401
    # encrypted with another key: does not decrypt
    body = json.dumps({"encrypt": feishu_encrypt("another-key", json.dumps(challenge))}).encode()
    assert enc.post("/bots/feishu", content=body).status_code == 401
    assert searches == [] and fake.requests == []


def test_feishu_encrypted_message_answered_through_open_api(make_client, fake, searches):
    client = make_client(**feishu_settings(fake), public_url="https://kb.example.com")
    body = json.dumps({"encrypt": feishu_encrypt(FS_ENCRYPT_KEY, json.dumps(feishu_message_event(NCCL_ERROR)))}).encode()
    r = client.post("/bots/feishu", content=body, headers=feishu_headers(body))
    assert r.status_code == 200
    (token_req,) = fake.wait_for("/auth/v3/tenant_access_token/internal")
    assert token_req["json"] == {"app_id": FS_APP_ID, "app_secret": FS_APP_SECRET}
    sent = feishu_posts(fake)[0]
    assert sent["query"] == {"receive_id_type": "chat_id"}
    assert sent["headers"]["authorization"] == "Bearer t-fake-tenant-token"
    msg = sent["json"]
    assert msg["receive_id"] == "oc_5ce6d572455d361153b7xx51da133945"
    assert msg["msg_type"] == "post"
    post = json.loads(msg["content"])
    assert post["zh_cn"]["title"] == NCCL_TITLE
    assert NCCL_FIX in msg["content"]
    assert {"tag": "a", "text": "Full article", "href": "https://kb.example.com/articles/nccl-p2p-hang"} in \
        [el for row in post["zh_cn"]["content"] for el in row]
    assert searches == [NCCL_ERROR]  # "@_user_1" stripped

    # redelivery of the same event_id: acknowledged, not answered again
    r = client.post("/bots/feishu", content=body, headers=feishu_headers(body))
    assert r.status_code == 200
    # a second message reuses the cached tenant_access_token
    body2 = json.dumps({"encrypt": feishu_encrypt(FS_ENCRYPT_KEY, json.dumps(feishu_message_event(ZERO3_QUERY, event_id="ev2")))}).encode()
    assert client.post("/bots/feishu", content=body2, headers=feishu_headers(body2)).status_code == 200
    feishu_posts(fake, count=2)
    settle()
    assert len(feishu_posts(fake, count=2)) == 2
    assert len(fake.matching("/tenant_access_token/internal")) == 1
    assert ZERO3_FIX in feishu_posts(fake, count=2)[1]["json"]["content"]
    assert searches == [NCCL_ERROR, ZERO3_QUERY]


def test_feishu_plain_message_without_encrypt_key(make_client, fake, searches):
    client = make_client(**feishu_settings(fake, encrypt_key=None))
    r = client.post("/bots/feishu", json=feishu_message_event(ZERO3_QUERY))
    assert r.status_code == 200
    sent = feishu_posts(fake)[0]
    assert ZERO3_TITLE in sent["json"]["content"] and "根本原因" in sent["json"]["content"]
    r = client.post("/bots/feishu", json=feishu_message_event(ZERO3_QUERY, event_id="ev-x", token="wrong-token"))
    assert r.status_code == 401
    settle()
    assert searches == [ZERO3_QUERY]


def test_feishu_feedback_card_and_its_verified_click(make_client, fake, kb):
    client = make_client(**feishu_settings(fake))
    body = json.dumps({"encrypt": feishu_encrypt(FS_ENCRYPT_KEY, json.dumps(feishu_message_event(NCCL_ERROR, event_id="ev-fb")))}).encode()
    assert client.post("/bots/feishu", content=body, headers=feishu_headers(body)).status_code == 200
    (card_msg,) = [r for r in fake.wait_for("/im/v1/messages", count=2) if r["json"]["msg_type"] == "interactive"]
    card = json.loads(card_msg["json"]["content"])
    (actions,) = [e["actions"] for e in card["elements"] if e["tag"] == "action"]
    down = next(b for b in actions if b["value"]["kb_feedback"] == "0")
    assert down["value"]["a"] == "nccl-p2p-hang" and down["value"]["s"]

    def click(token: str, event_id: str) -> bytes:
        event = {"schema": "2.0", "header": {"event_id": event_id, "token": token, "event_type": "card.action.trigger",
                                             "create_time": "1609073151345", "app_id": FS_APP_ID},
                 "event": {"operator": {"open_id": "ou_84aad35d084aa403a838cf73ee18467"},
                           "action": {"tag": "button", "value": down["value"]}}}
        return json.dumps({"encrypt": feishu_encrypt(FS_ENCRYPT_KEY, json.dumps(event))}).encode()

    forged = click("wrong-token", "ev-click-1")
    assert client.post("/bots/feishu", content=forged, headers=feishu_headers(forged)).status_code == 401
    unsigned = click(FS_VTOKEN, "ev-click-2")
    assert client.post("/bots/feishu", content=unsigned).status_code == 401  # no signature headers
    assert not kb.gaps()  # nothing recorded by either
    signed = click(FS_VTOKEN, "ev-click-3")
    r = client.post("/bots/feishu", content=signed, headers=feishu_headers(signed))
    assert r.status_code == 200 and r.json()["toast"]["type"] == "success"
    (gap,) = kb.gaps()
    assert gap.unhelpful == 1 and gap.doors == ["feishu"] and "nccl-p2p-hang" in gap.closest


def test_feishu_none_verdict_in_chinese(make_client, fake, kb):
    reason = core_verdict_none(kb, NONE_ZH)
    client = make_client(**feishu_settings(fake, encrypt_key=None))
    r = client.post("/bots/feishu", json=feishu_message_event(NONE_ZH, event_id="ev-none"))
    assert r.status_code == 200
    (sent,) = fake.wait_for("/im/v1/messages")
    post = json.loads(sent["json"]["content"])["zh_cn"]
    rows = ["".join(el["text"] for el in row) for row in post["content"]]
    assert rows[0] == f"知识库里没有针对这个报错的文章（{reason}）。"
    assert rows[1].startswith("1. 相关但不是同一问题：") and "(把握：" in rows[1]
    assert rows[-1].startswith("如何补充：")
    assert_none_wording("\n".join(rows), reason, "zh")
    assert post["title"] == ""  # no article title presented as the answer


@pytest.mark.parametrize("case", ["wrong_key", "missing_signature", "missing_nonce", "tampered", "wrong_token", "undecryptable"])
def test_feishu_bad_requests_are_refused_without_searching(make_client, fake, searches, case):
    client = make_client(**feishu_settings(fake))
    event = feishu_message_event(NCCL_ERROR, token="wrong" if case == "wrong_token" else FS_VTOKEN)
    body = json.dumps({"encrypt": feishu_encrypt(FS_ENCRYPT_KEY, json.dumps(event))}).encode()
    headers = feishu_headers(body)
    if case == "wrong_key":
        headers = feishu_headers(body, key="not-the-key")
    elif case == "missing_signature":
        del headers["X-Lark-Signature"]
    elif case == "missing_nonce":
        del headers["X-Lark-Request-Nonce"]
    elif case == "tampered":
        other = json.dumps({"encrypt": feishu_encrypt(FS_ENCRYPT_KEY, json.dumps(feishu_message_event("rm -rf /")))}).encode()
        body = other  # signed headers belong to the original body
    elif case == "undecryptable":
        body = json.dumps({"encrypt": base64.b64encode(b"x" * 48).decode()}).encode()
        headers = feishu_headers(body)
    r = client.post("/bots/feishu", content=body, headers=headers)
    assert r.status_code == 401, r.text
    assert r.json()["detail"]
    settle()
    assert searches == [] and fake.requests == []


# -- WeCom --------------------------------------------------------------------

WC_CORP = "ww1436e0e65a779aee"
WC_TOKEN = "hJqcu3uJ9Tn2gXPmxx2w9kkCkCE2EPYo"
WC_AES = base64.b64encode(bytes(range(32))).decode().rstrip("=")   # 43 characters
WC_SECRET = "wecom-app-secret"
WC_AGENT = "1000002"


def wecom_encrypt(plain: str, receiveid: str = WC_CORP, encoding_key: str = WC_AES,
                  random16: bytes = b"0123456789abcdef") -> str:
    """WeCom's scheme: key = b64decode(EncodingAESKey + "="), IV = key[:16], PKCS#7 to 32 bytes,
    plaintext = random(16) + len(4, big-endian) + msg + receiveid."""
    key = base64.b64decode(encoding_key + "=")
    msg = plain.encode()
    data = random16 + struct.pack(">I", len(msg)) + msg + receiveid.encode()
    pad = 32 - len(data) % 32
    data += bytes([pad]) * pad
    return base64.b64encode(AES.new(key, AES.MODE_CBC, key[:16]).encrypt(data)).decode()


def wecom_sign(encrypted: str, ts: str, nonce: str, token: str = WC_TOKEN) -> str:
    return hashlib.sha1("".join(sorted([token, ts, nonce, encrypted])).encode()).hexdigest()


def wecom_text_xml(content: str, msg_id: str = "1234567890123456", user: str = "zhangsan") -> str:
    return (f"<xml><ToUserName><![CDATA[{WC_CORP}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>"
            f"<CreateTime>1348831860</CreateTime><MsgType><![CDATA[text]]></MsgType>"
            f"<Content><![CDATA[{content}]]></Content><MsgId>{msg_id}</MsgId><AgentID>{WC_AGENT}</AgentID></xml>")


def wecom_post(client, inner_xml: str, *, receiveid: str = WC_CORP, token: str = WC_TOKEN, tamper: bool = False):
    encrypted = wecom_encrypt(inner_xml, receiveid=receiveid)
    ts, nonce = str(int(time.time())), "1372623149"
    sig = wecom_sign(encrypted, ts, nonce, token=token)
    if tamper:
        encrypted = wecom_encrypt(inner_xml.replace("CUDA", "CUBA"), receiveid=receiveid)
    body = (f"<xml><ToUserName><![CDATA[{WC_CORP}]]></ToUserName><Encrypt><![CDATA[{encrypted}]]></Encrypt>"
            f"<AgentID><![CDATA[{WC_AGENT}]]></AgentID></xml>")
    return client.post("/bots/wecom", params={"msg_signature": sig, "timestamp": ts, "nonce": nonce},
                       content=body.encode(), headers={"Content-Type": "text/xml"})


def wecom_settings(fake) -> dict:
    return dict(wecom_corp_id=WC_CORP, wecom_token=WC_TOKEN, wecom_aes_key=WC_AES, wecom_secret=WC_SECRET,
                wecom_agent_id=WC_AGENT, wecom_api_base=fake.url)


def test_wecom_crypto_matches_the_official_sample_and_round_trips():
    # WeCom's published VerifyURL sample (WXBizMsgCrypt Sample): token, key, corp id, signature, echostr.
    token, key, corp = "QDG6eK", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C", "wx5823bf96d3bd56c7"
    echostr = "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ=="
    assert wecom_mod.msg_signature(token, "1409659589", "263014780", echostr) == "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3"
    assert wecom_mod.decrypt(wecom_mod.aes_key(key), echostr) == ("1616140317555161061", corp)
    # test-side encryption -> bot decryption, and bot encryption -> test-side decryption
    k = wecom_mod.aes_key(WC_AES)
    assert wecom_mod.decrypt(k, wecom_encrypt("<xml>企业微信</xml>")) == ("<xml>企业微信</xml>", WC_CORP)
    raw = AES.new(k, AES.MODE_CBC, k[:16]).decrypt(base64.b64decode(wecom_mod.encrypt(k, "回复", WC_CORP)))
    raw = raw[: -raw[-1]]
    (n,) = struct.unpack(">I", raw[16:20])
    assert raw[20:20 + n].decode() == "回复" and raw[20 + n:].decode() == WC_CORP


def test_wecom_off_without_secrets(make_client, searches):
    client = make_client(wecom_corp_id=WC_CORP, wecom_token=WC_TOKEN)  # half configured is still off
    r = client.get("/bots/wecom", params={"msg_signature": "x", "timestamp": "1", "nonce": "2", "echostr": "e"})
    assert r.status_code == 404 and "KB_WECOM_AES_KEY" in r.json()["detail"]
    assert client.post("/bots/wecom", content=b"<xml/>").status_code == 404


def test_wecom_url_verification(make_client, fake, searches):
    client = make_client(**wecom_settings(fake))
    echostr = wecom_encrypt("2917481731672839123")
    ts, nonce = "1409659589", "263014780"
    params = {"msg_signature": wecom_sign(echostr, ts, nonce), "timestamp": ts, "nonce": nonce, "echostr": echostr}
    r = client.get("/bots/wecom", params=params)
    assert r.status_code == 200 and r.text == "2917481731672839123"

    assert client.get("/bots/wecom", params={**params, "msg_signature": "0" * 40}).status_code == 401
    assert client.get("/bots/wecom", params={k: v for k, v in params.items() if k != "msg_signature"}).status_code == 401
    assert client.get("/bots/wecom", params={**params, "nonce": "other"}).status_code == 401
    other = wecom_encrypt("2917481731672839123", receiveid="ww_someone_else")
    r = client.get("/bots/wecom", params={**params, "echostr": other, "msg_signature": wecom_sign(other, ts, nonce)})
    assert r.status_code == 401 and "CorpID" in r.json()["detail"]
    assert searches == []


def test_wecom_text_message_answered_via_message_send(make_client, fake, searches):
    client = make_client(**wecom_settings(fake), public_url="https://kb.example.com")
    query = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.39 GiB during evaluation"
    r = wecom_post(client, wecom_text_xml(query))
    assert r.status_code == 200 and r.text == ""
    (tok,) = fake.wait_for("/gettoken")
    assert tok["method"] == "GET" and tok["query"] == {"corpid": WC_CORP, "corpsecret": WC_SECRET}
    (sent,) = fake.wait_for("/message/send")
    assert sent["query"] == {"access_token": "wecom-fake-token"}
    msg = sent["json"]
    assert msg["touser"] == "zhangsan" and msg["agentid"] == 1000002 and msg["msgtype"] == "markdown"
    content = msg["markdown"]["content"]
    assert "CUDA out of memory only during evaluation" in content and "eval_accumulation_steps" in content
    assert "https://kb.example.com/articles/cuda-oom-eval" in content
    assert len(content.encode()) <= 2048
    assert searches == [query]

    # WeCom retries a slow callback with the same MsgId: answered once
    assert wecom_post(client, wecom_text_xml(query)).status_code == 200
    settle()
    assert len(fake.matching("/message/send")) == 1
    assert searches == [query]


def test_wecom_none_verdict_says_no_article(make_client, fake, kb):
    reason = core_verdict_none(kb, NONE_ZH)
    client = make_client(**wecom_settings(fake), public_url="https://kb.example.com")
    assert wecom_post(client, wecom_text_xml(NONE_ZH, msg_id="99")).status_code == 200
    (sent,) = fake.wait_for("/message/send")
    content = sent["json"]["markdown"]["content"]
    assert content.startswith(f"知识库里没有针对这个报错的文章（{reason}）。")
    assert_none_wording(content, reason, "zh")
    assert len(content.encode()) <= 2048
    # and in English, for an English message
    reason_en = core_verdict_none(kb, NONE_EN)
    assert wecom_post(client, wecom_text_xml(NONE_EN, msg_id="100")).status_code == 200
    content = fake.wait_for("/message/send", count=2)[1]["json"]["markdown"]["content"]
    assert_none_wording(content, reason_en)


@pytest.mark.parametrize("case", ["tampered", "wrong_token", "wrong_corp", "doctype", "missing_signature"])
def test_wecom_bad_posts_are_refused_without_searching(make_client, fake, searches, case):
    client = make_client(**wecom_settings(fake))
    xml = wecom_text_xml(NCCL_ERROR)
    if case == "tampered":
        r = wecom_post(client, wecom_text_xml("CUDA out of memory"), tamper=True)
        assert r.status_code == 401
    elif case == "wrong_token":
        assert wecom_post(client, xml, token="not-the-token").status_code == 401
    elif case == "wrong_corp":
        r = wecom_post(client, xml, receiveid="ww_someone_else")
        assert r.status_code == 401 and "CorpID" in r.json()["detail"]
    elif case == "doctype":
        body = ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
                "<xml><Encrypt>&e;</Encrypt></xml>")
        r = client.post("/bots/wecom", params={"msg_signature": "x", "timestamp": "1", "nonce": "2"}, content=body.encode())
        assert r.status_code == 400
    elif case == "missing_signature":
        encrypted = wecom_encrypt(xml)
        r = client.post("/bots/wecom", content=f"<xml><Encrypt><![CDATA[{encrypted}]]></Encrypt></xml>".encode())
        assert r.status_code == 401
    settle()
    assert searches == [] and fake.requests == []


# -- the shared formatter -------------------------------------------------------


def result(article_id="a1", title="Title", root_cause="", fix="", snippet="", confidence=0.95, lang="en"):
    return SimpleNamespace(article_id=article_id, title=title, lang=lang, score=1.0, confidence=confidence,
                           root_cause=root_cause, fix=fix, snippet=snippet, source=None, tags=[], matched_error=None)


def response(*results, confident=True, verdict=None, reason="the error line matches the article's"):
    verdict = verdict or ("answer" if confident else "maybe")
    return SimpleNamespace(results=list(results), confident=confident, verdict=verdict, reason=reason)


def test_formatter_language_follows_the_message():
    assert fmt.reply_lang("RuntimeError: CUDA error") == "en"
    assert fmt.reply_lang("训练时 RuntimeError: CUDA error") == "zh"
    resp = response(result(root_cause="The cause.", fix="The fix."))
    en = mattermost_mod.to_mattermost(fmt.build_answer(resp, "RuntimeError: x"))
    zh = mattermost_mod.to_mattermost(fmt.build_answer(resp, "报错 RuntimeError: x"))
    assert "Root cause" in en and "Fix" in en and "Full article" in en
    assert "Confident answer (95%): the error line matches the article's" in en
    assert "根本原因" in zh and "解决办法" in zh and "查看全文" in zh
    assert "有把握的答案（95%）：the error line matches the article's" in zh


def test_formatter_wording_follows_the_verdict_not_the_number():
    """No thresholds in the bots: a low number under an `answer` is still the answer, a high one under `none` is not."""
    low = response(result(root_cause="The cause.", fix="The fix.", confidence=0.05), reason="why")
    answer = fmt.build_answer(low, "err")
    assert answer.kind == "answer" and answer.confident
    assert "Confident answer (5%): why" in mattermost_mod.to_mattermost(answer)
    high = response(result(root_cause="The cause.", fix="The fix.", confidence=0.99), confident=False, verdict="none",
                    reason="the error type `FooError` does not appear in any article")
    none = fmt.build_answer(high, "err")
    assert none.kind == "none" and not none.confident
    text = mattermost_mod.to_mattermost(none)
    assert text.startswith("No article in the knowledge base covers this error "
                           "(the error type `FooError` does not appear in any article).")
    assert "1. Related, not a match: **Title** (Confidence: 99%)" in text
    assert "The fix." not in text and "kb ingest FILE" in text
    assert not hasattr(fmt, "confidence_words")


def test_formatter_links_absolute_or_relative():
    resp = response(result(article_id="nccl p2p", root_cause="c", fix="f"))
    rel = fmt.build_answer(resp, "x", "")
    assert rel.items[0].url == "/articles/nccl%20p2p"
    # Slack cannot link a relative URL: shown as text, never a broken <|> link
    assert "<" not in slack_mod.to_slack(rel)["text"].replace("&lt;", "")
    assert "/articles/nccl%20p2p" in slack_mod.to_slack(rel)["text"]
    ab = fmt.build_answer(resp, "x", "https://kb.example.com/")
    assert ab.items[0].url == "https://kb.example.com/articles/nccl%20p2p"
    assert "<https://kb.example.com/articles/nccl%20p2p|Full article>" in slack_mod.to_slack(ab)["text"]


def test_formatter_trims_long_code_and_points_to_the_article():
    code = "\n".join(f"line {i}: " + "x" * 20 for i in range(60))
    fix = f"Apply this patch:\n\n```python\n{code}\n```\n"
    answer = fmt.build_answer(response(result(fix=fix, root_cause="Because. " * 200)), "err", "https://kb.example.com")
    assert answer.trimmed
    text = mattermost_mod.to_mattermost(answer)
    assert "line 0:" in text and "line 59:" not in text
    assert "trimmed" in text
    assert "[Some of the text was trimmed; the full article has all of it](https://kb.example.com/articles/a1)" in text
    assert len(text) < 3000
    zh = mattermost_mod.to_mattermost(fmt.build_answer(response(result(fix=fix)), "报错", ""))
    assert "已截断" in zh
    # WeCom's 2048-byte limit holds even for long Chinese text
    long_zh = response(result(root_cause="原因" * 2000, fix="办法" * 2000))
    content = wecom_mod.to_wecom(fmt.build_answer(long_zh, "报错", "https://kb.example.com"))["markdown"]["content"]
    assert len(content.encode()) <= 2048 and "kb.example.com/articles/a1" in content


def test_formatter_is_honest_when_not_confident():
    resp = response(result("a", "First guess", root_cause="Maybe this.", fix="Do X.", confidence=0.2),
                    result("b", "Second guess", snippet="Some text.", confidence=0.1),
                    result("c", "Third guess", confidence=0.05), confident=False, reason="only some words match")
    answer = fmt.build_answer(resp, "some error")
    assert answer.kind == "maybe" and not answer.confident and len(answer.items) == 2
    text = mattermost_mod.to_mattermost(answer)
    assert text.startswith("Possible match — check it against your error: only some words match")
    assert "1. Possible match: **First guess**" in text and "2. Related: **Second guess**" in text
    assert "Third guess" not in text
    assert "Do X." not in text  # no fix presented as if it were the answer
    zh = mattermost_mod.to_mattermost(fmt.build_answer(resp, "这个报错怎么办"))
    assert zh.startswith("可能是这篇，请先核对它和你的报错是否一致：only some words match")
    assert "可能匹配" in zh and "2. 相关：" in zh
    # `none` in both languages, with and without related articles
    for lang, query in (("en", "some error"), ("zh", "这个报错怎么办")):
        none = fmt.build_answer(response(*resp.results, confident=False, verdict="none", reason="r0"), query)
        assert_none_wording(mattermost_mod.to_mattermost(none), "r0", lang)
        for render in (lambda a: slack_mod.to_slack(a)["text"], lambda a: dingtalk_mod.to_dingtalk(a)["markdown"]["text"],
                       lambda a: wecom_mod.to_wecom(a)["markdown"]["content"], lambda a: feishu_mod.to_feishu(a)["content"]):
            assert_none_wording(render(none), "r0", lang)
    nothing = mattermost_mod.to_mattermost(fmt.build_answer(response(confident=False, verdict="none", reason="r1"), "x"))
    assert nothing.startswith("No article in the knowledge base covers this error (r1).") and "kb ingest FILE" in nothing


HOSTILE = ("<!channel> @here @all @所有人 ping <@U024BE7LH> and <at user_id=\"all\">all</at> & "
           "<script>alert(1)</script> <font color=\"red\">red</font> [click me](javascript:alert(1)) "
           "![pixel](https://tracker.example/p.png) `List<int>` a > b\n\n```bash\necho <!here> @channel 2>&1\n```")


def test_formatter_renders_hostile_article_text_inert():
    answer = fmt.build_answer(response(result(title="<b>@channel</b> title", root_cause=HOSTILE, fix=HOSTILE)),
                              "err", "https://kb.example.com")
    slack = slack_mod.to_slack(answer)
    block_texts = [b["text"]["text"] if "text" in b else b["elements"][0]["text"] for b in slack["blocks"]]
    for text in [slack["text"], *block_texts]:
        assert "<!channel>" not in text and "<!here>" not in text and "<@U024" not in text and "<script" not in text
    assert "&lt;!here&gt;" in slack["text"] and "&lt;!channel&gt;" in slack["text"]
    assert "&amp;" in slack["text"]
    # the only Slack link is ours
    assert re.findall(r"<([^>]+)>", slack["text"]) == ["https://kb.example.com/articles/a1|Full article"]

    for text in (mattermost_mod.to_mattermost(answer), dingtalk_mod.to_dingtalk(answer)["markdown"]["text"],
                 wecom_mod.to_wecom(answer)["markdown"]["content"], feishu_mod.to_feishu(answer)["content"]):
        assert "<script" not in text and "<font" not in text and "<at " not in text and "<@U024" not in text
        assert "](javascript:" not in text and "![" not in text
        for mention in ("@here", "@all", "@channel", "@所有人"):
            # defused everywhere outside code blocks (a zero-width space after "@")
            assert mention not in text.split("```")[0], (mention, text)
    mm = mattermost_mod.to_mattermost(answer)
    assert "click me (javascript:alert(1))" in mm  # the target is visible, not hidden behind a label
    assert "2>&1" in mm  # code stays copyable
    assert dingtalk_mod.to_dingtalk(answer)["markdown"]["title"].startswith("@\u200bchannel")
