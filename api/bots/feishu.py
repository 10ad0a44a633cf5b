"""Feishu / Lark (飞书): an app bot fed by event subscription v2 (schema 2.0), HTTP callback mode.

Verification, as in Feishu's event-subscription docs and official SDK:
- Encrypted bodies `{"encrypt": "<base64>"}`: AES-256-CBC, key = SHA-256(Encrypt Key), the
  IV is the first 16 bytes of the base64-decoded payload, PKCS#7 padding.
- Signature (whenever an Encrypt Key is set): `X-Lark-Signature` =
  hex(SHA-256(X-Lark-Request-Timestamp + X-Lark-Request-Nonce + Encrypt Key + raw body)),
  compared in constant time. Required on every event; on the one-time `url_verification`
  it is checked when present (Feishu's own SDK answers the challenge before the signature).
- Verification Token: `token` (url_verification) or `header.token` (events) must equal
  KB_FEISHU_VERIFICATION_TOKEN.

`url_verification` is answered with `{"challenge"}`. `im.message.receive_v1` text messages
(content `{"text": "@_user_1 …"}`, mentions stripped) are acknowledged at once and answered
in the background: a tenant_access_token from auth/v3/tenant_access_token/internal (cached),
then POST im/v1/messages?receive_id_type=chat_id with a `post` (rich text) message.
Redeliveries are dropped by `header.event_id`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re

from Crypto.Cipher import AES
from fastapi import APIRouter, BackgroundTasks, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from kb.errors import KbError

from ..settings import ApiSettings
from .common import Dedupe, TokenCache, answer_for, background, denied, log, post_json, require, same_secret, seen_events_path
from .format import Answer, answer_foot, Block, defang_tags, defuse_mentions, is_absolute, percent

_MENTION_KEY = re.compile(r"@_user_\d+|@_all")
_TOKEN_ERRORS = {99991661, 99991663, 99991668}


def decrypt(encrypt_key: str, encrypted: str) -> str:
    """Feishu's `encrypt` field -> plaintext JSON (raises ValueError when it does not decrypt)."""
    try:
        data = base64.b64decode(encrypted, validate=True)
    except (ValueError, TypeError):
        raise ValueError("`encrypt` is not base64") from None
    if len(data) < 32 or len(data) % 16:
        raise ValueError("`encrypt` has the wrong length")
    key = hashlib.sha256(encrypt_key.encode("utf-8")).digest()
    plain = AES.new(key, AES.MODE_CBC, data[:16]).decrypt(data[16:])
    pad = plain[-1]
    if not 1 <= pad <= 16 or plain[-pad:] != bytes([pad]) * pad:
        raise ValueError("bad padding")
    return plain[:-pad].decode("utf-8")


def signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode("utf-8") + body).hexdigest()


def message_text(message: dict) -> str:
    """The text a user typed in an im.message.receive_v1 text message, mentions removed."""
    try:
        content = json.loads(message.get("content") or "{}")
    except ValueError:
        return ""
    text = str(content.get("text", "")) if isinstance(content, dict) else ""
    for mention in message.get("mentions") or []:
        key = mention.get("key") if isinstance(mention, dict) else None
        if key:
            text = text.replace(key, " ")
    return _MENTION_KEY.sub(" ", text).strip()


def build_router(settings: ApiSettings) -> APIRouter:
    router = APIRouter()
    seen_events = Dedupe(seen_events_path(settings, "feishu"))
    api = settings.feishu_api_base.rstrip("/")

    async def fetch_token() -> tuple[str, float]:
        reply = await post_json(f"{api}/auth/v3/tenant_access_token/internal",
                                {"app_id": settings.feishu_app_id, "app_secret": settings.feishu_app_secret})
        if not isinstance(reply, dict) or reply.get("code") != 0 or not reply.get("tenant_access_token"):
            raise RuntimeError(f"Feishu tenant_access_token failed: {str(reply)[:200]}")
        return reply["tenant_access_token"], float(reply.get("expire", 7200))

    tokens = TokenCache(fetch_token)

    async def send(chat_id: str, body: dict) -> None:
        message = {"receive_id": chat_id, **body}
        for attempt in (0, 1):
            token = await tokens.get(refresh=attempt == 1)
            reply = await post_json(f"{api}/im/v1/messages", message, params={"receive_id_type": "chat_id"},
                                    headers={"Authorization": f"Bearer {token}"})
            code = reply.get("code") if isinstance(reply, dict) else None
            if code == 0:
                return
            if code not in _TOKEN_ERRORS:
                break
        log.warning("kb.bots: Feishu im/v1/messages failed: %s", str(reply)[:300])

    @router.post("/feishu")
    async def feishu_event(request: Request, tasks: BackgroundTasks):
        require(settings, "Feishu", feishu_app_id=settings.feishu_app_id,
                feishu_app_secret=settings.feishu_app_secret,
                feishu_verification_token=settings.feishu_verification_token)
        body = await request.body()
        try:
            outer = json.loads(body)
        except ValueError:
            raise HTTPException(400, "the body is not valid JSON") from None
        if not isinstance(outer, dict):
            raise HTTPException(400, "the body is not a Feishu event")
        encrypt_key = settings.feishu_encrypt_key
        if "encrypt" in outer:
            if not encrypt_key:
                raise denied("the event is encrypted but KB_FEISHU_ENCRYPT_KEY is not set")
            try:
                payload = json.loads(decrypt(encrypt_key, str(outer["encrypt"])))
            except (ValueError, UnicodeDecodeError):
                raise denied("the event does not decrypt with KB_FEISHU_ENCRYPT_KEY") from None
            if not isinstance(payload, dict):
                raise denied("the decrypted event is not a JSON object")
        else:
            payload = outer

        is_challenge = payload.get("type") == "url_verification"
        if encrypt_key:
            ts = request.headers.get("x-lark-request-timestamp")
            nonce = request.headers.get("x-lark-request-nonce")
            sig = request.headers.get("x-lark-signature")
            if ts is None or nonce is None or not sig:
                if not is_challenge:
                    raise denied("missing Feishu signature: X-Lark-Request-Timestamp, X-Lark-Request-Nonce "
                                 "and X-Lark-Signature are required")
            elif not hmac.compare_digest(signature(ts, nonce, encrypt_key, body).encode(), sig.strip().encode()):
                raise denied("bad Feishu signature: check KB_FEISHU_ENCRYPT_KEY")

        header = payload.get("header") if isinstance(payload.get("header"), dict) else {}
        token = payload.get("token") if is_challenge or not header else header.get("token")
        if not same_secret(token if isinstance(token, str) else None, settings.feishu_verification_token):
            raise denied("wrong Feishu verification token: check KB_FEISHU_VERIFICATION_TOKEN")

        if is_challenge:
            return JSONResponse({"challenge": payload.get("challenge", "")})
        if payload.get("schema") == "2.0" and header.get("event_type") == "card.action.trigger":
            return await card_action(request, header, payload.get("event") or {})
        if payload.get("schema") != "2.0" or header.get("event_type") != "im.message.receive_v1":
            return JSONResponse({"msg": "ignored"})
        if not seen_events.first_time(header.get("event_id")):
            return JSONResponse({"msg": "duplicate"})
        event = payload.get("event") or {}
        message = event.get("message") or {}
        sender = event.get("sender") or {}
        if message.get("message_type") != "text" or sender.get("sender_type") not in (None, "user") \
                or not message.get("chat_id"):
            return JSONResponse({"msg": "ignored"})
        text = message_text(message)
        chat_id = message["chat_id"]
        searches = request.app.state.searches

        async def answer() -> None:
            ans = await answer_for(searches if text else None, settings, text, "feishu",
                                   str((sender.get("sender_id") or {}).get("open_id") or "") or None)
            await send(chat_id, to_feishu(ans))
            card = feedback_card(ans)
            if card:
                await send(chat_id, card)

        tasks.add_task(background("feishu im/v1/messages", answer))
        return JSONResponse({"msg": "ok"})

    async def card_action(request: Request, header: dict, event: dict) -> JSONResponse:
        """A click on the 👍/👎 card, delivered (and verified) like every other event: recorded as
        feedback for `kb gaps`; it never changes the ranking by itself."""
        action = event.get("action") if isinstance(event.get("action"), dict) else {}
        value = action.get("value") if isinstance(action.get("value"), dict) else {}
        if FEEDBACK_KEY not in value or not seen_events.first_time(header.get("event_id")):
            return JSONResponse({})
        user = str((event.get("operator") or {}).get("open_id") or "") or None
        try:
            await run_in_threadpool(request.app.state.kb.feedback, str(value.get("s")), str(value.get("a")),
                                    value[FEEDBACK_KEY] == "1", None, f"feishu:{user}")
        except KbError as exc:
            log.warning("kb.bots: feishu feedback not recorded: %s", exc)
            return JSONResponse({"toast": {"type": "error", "content": str(exc)[:100]}})
        return JSONResponse({"toast": {"type": "success", "content": "已记录，谢谢 / Thanks, recorded"}})

    return router


# -- rendering ------------------------------------------------------------------

# Feishu/Lark: a `post` (rich text) of plain-text elements, so nothing in an article is parsed.

def _feishu_text(text: str, bold: bool = False) -> dict:
    el = {"tag": "text", "text": defang_tags(text)}
    if bold:
        el["style"] = ["bold"]
    return el


def _feishu_link(label: str, url: str) -> list[dict]:
    if is_absolute(url):
        return [{"tag": "a", "text": label, "href": url}]
    return [_feishu_text(f"{label}: {url}")]


def _feishu_blocks(blocks: list[Block]) -> list[list[dict]]:
    rows = []
    for b in blocks:
        if b.kind == "code":
            rows.extend([[_feishu_text("    " + defuse_mentions(line))] for line in b.text.split("\n")])
        else:
            rows.extend([[_feishu_text(line)] for line in b.text.split("\n")])
    return rows


def feishu_post(answer: Answer) -> dict:
    """The `post` content object: {"zh_cn": {"title", "content": [[elements], ...]}}."""
    w, c = answer.w, "：" if answer.lang == "zh" else ": "
    rows: list[list[dict]] = []
    title = answer.title if answer.kind == "answer" else ""
    if answer.kind in ("empty", "error"):
        rows.append([_feishu_text(answer.headline)])
    elif answer.kind == "answer":
        item = answer.items[0]
        for label, blocks in ((w["root_cause"], item.root_cause), (w["fix"], item.fix), (w["excerpt"], item.excerpt)):
            if blocks:
                rows.append([_feishu_text(label + c, bold=True)])
                rows.extend(_feishu_blocks(blocks))
        rows.append([_feishu_text(answer_foot(answer))])
        rows.append(_feishu_link(w["trimmed"] if answer.trimmed else w["full_article"], item.url))
    else:
        rows.append([_feishu_text(answer.headline)])
        for n, item in enumerate(answer.items, 1):
            rows.append([_feishu_text(f"{n}. {item.label}{c}"), _feishu_text(item.title, bold=True),
                         _feishu_text(f" ({w['confidence']}{c}{percent(item.confidence)})")])
            blocks = item.root_cause or item.excerpt
            if blocks:
                label = w["root_cause"] if item.root_cause else w["excerpt"]
                rows.append([_feishu_text(label + c + " ".join(b.text for b in blocks).replace("\n", " "))])
            rows.append(_feishu_link(w["full_article"], item.url))
        rows.append([_feishu_text(answer.tail)])
    return {"zh_cn": {"title": defang_tags(title), "content": rows}}


def to_feishu(answer: Answer) -> dict:
    """Body fields for im/v1/messages: msg_type and the JSON-encoded content."""
    return {"msg_type": "post", "content": json.dumps(feishu_post(answer), ensure_ascii=False)}


FEEDBACK_KEY = "kb_feedback"


def feedback_card(answer: Answer) -> dict | None:
    """A small interactive card with 👍/👎 on the top result (a `post` cannot carry buttons);
    the click comes back as a card.action.trigger event. None when there is nothing to rate."""
    if not (answer.search_id and answer.items and answer.kind in ("answer", "maybe")):
        return None
    zh = answer.lang == "zh"

    def button(text: str, helpful: bool, kind: str) -> dict:
        return {"tag": "button", "type": kind, "text": {"tag": "plain_text", "content": text},
                "value": {FEEDBACK_KEY: "1" if helpful else "0", "s": answer.search_id, "a": answer.items[0].article_id}}

    card = {"config": {"wide_screen_mode": True}, "elements": [
        {"tag": "div", "text": {"tag": "plain_text", "content": "排在第一的文章解决问题了吗？" if zh else "Did the top article solve it?"}},
        {"tag": "action", "actions": [button("👍 解决了" if zh else "👍 Yes", True, "primary"),
                                     button("👎 没有" if zh else "👎 No", False, "default")]},
    ]}
    return {"msg_type": "interactive", "content": json.dumps(card, ensure_ascii=False)}
