"""WeCom (企业微信): a self-built app's message callback (接收消息), answered via message/send.

The callback crypto (企业微信 "加解密方案说明"):
- msg_signature = hex(SHA-1(concat(sorted([token, timestamp, nonce, encrypt])))).
- AESKey = base64decode(EncodingAESKey + "="), 32 bytes; AES-256-CBC, IV = AESKey[:16],
  PKCS#7 padding to a multiple of 32 bytes.
- plaintext = 16 random bytes + 4-byte big-endian length + msg + receiveid, where the
  receiveid of a self-built app is the CorpID.

GET /bots/wecom?msg_signature&timestamp&nonce&echostr: the URL check; verify, decrypt the
echostr and return the plaintext as is. POST /bots/wecom?msg_signature&timestamp&nonce with
`<xml><ToUserName/><AgentID/><Encrypt/></xml>`: verify, decrypt, check the CorpID, parse the
text message (`FromUserName`, `Content`, `MsgId`), drop redeliveries by MsgId, return an
empty 200 at once and answer in the background: gettoken (cached) then message/send
(markdown, to the sender, with KB_WECOM_AGENT_ID).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct

from Crypto.Cipher import AES
from fastapi import APIRouter, BackgroundTasks, HTTPException, Request
from fastapi.responses import PlainTextResponse, Response

from ..settings import ApiSettings
from .common import Dedupe, TokenCache, answer_for, background, denied, http_client, log, parse_xml, post_json, require, seen_events_path
from .format import Answer, defang_tags, defuse_mentions, md_link, plain_link, render_sections, Style

BLOCK = 32
_TOKEN_ERRORS = {40001, 40014, 42001}


def aes_key(encoding_aes_key: str) -> bytes:
    """The 32-byte AES key from the 43-character EncodingAESKey."""
    try:
        key = base64.b64decode(encoding_aes_key + "=", validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(encoding_aes_key) != 43 or len(key) != 32:
        raise HTTPException(503, "KB_WECOM_AES_KEY must be the app's 43-character EncodingAESKey")
    return key


def msg_signature(token: str, timestamp: str, nonce: str, encrypt: str) -> str:
    return hashlib.sha1("".join(sorted([token, timestamp, nonce, encrypt])).encode("utf-8")).hexdigest()


def decrypt(key: bytes, encrypted: str) -> tuple[str, str]:
    """`Encrypt`/`echostr` -> (msg, receiveid); raises ValueError when it does not decrypt."""
    try:
        data = base64.b64decode(encrypted, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64") from None
    if not data or len(data) % 16:
        raise ValueError("wrong length")
    plain = AES.new(key, AES.MODE_CBC, key[:16]).decrypt(data)
    pad = plain[-1]
    if not 1 <= pad <= BLOCK or plain[-pad:] != bytes([pad]) * pad:
        raise ValueError("bad padding")
    plain = plain[:-pad]
    if len(plain) < 20:
        raise ValueError("too short")
    (length,) = struct.unpack(">I", plain[16:20])
    if 20 + length > len(plain):
        raise ValueError("bad length")
    return plain[20:20 + length].decode("utf-8"), plain[20 + length:].decode("utf-8")


def encrypt(key: bytes, msg: str, receiveid: str) -> str:
    """The inverse of `decrypt` (for passive replies; the bot answers actively instead)."""
    body = msg.encode("utf-8")
    plain = os.urandom(16) + struct.pack(">I", len(body)) + body + receiveid.encode("utf-8")
    pad = BLOCK - len(plain) % BLOCK
    plain += bytes([pad]) * pad
    return base64.b64encode(AES.new(key, AES.MODE_CBC, key[:16]).encrypt(plain)).decode()


def build_router(settings: ApiSettings) -> APIRouter:
    router = APIRouter()
    seen_messages = Dedupe(seen_events_path(settings, "wecom"))
    api = settings.wecom_api_base.rstrip("/")

    def configured() -> bytes:
        require(settings, "WeCom", wecom_corp_id=settings.wecom_corp_id, wecom_token=settings.wecom_token,
                wecom_aes_key=settings.wecom_aes_key, wecom_secret=settings.wecom_secret,
                wecom_agent_id=settings.wecom_agent_id)
        return aes_key(settings.wecom_aes_key)

    def check(params, encrypted: str | None) -> None:
        sig, ts, nonce = params.get("msg_signature"), params.get("timestamp"), params.get("nonce")
        if not sig or not ts or not nonce or not encrypted:
            raise denied("missing WeCom signature: msg_signature, timestamp, nonce and the encrypted message are required")
        expected = msg_signature(settings.wecom_token, ts, nonce, encrypted)
        if not hmac.compare_digest(expected.encode(), sig.strip().lower().encode()):
            raise denied("bad WeCom msg_signature: check KB_WECOM_TOKEN")

    def open_message(key: bytes, encrypted: str) -> str:
        try:
            msg, receiveid = decrypt(key, encrypted)
        except (ValueError, UnicodeDecodeError):
            raise denied("the message does not decrypt with KB_WECOM_AES_KEY") from None
        if not hmac.compare_digest(receiveid.encode(), settings.wecom_corp_id.encode()):
            raise denied("the message is for another CorpID: check KB_WECOM_CORP_ID")
        return msg

    async def fetch_token() -> tuple[str, float]:
        async with http_client() as client:
            resp = await client.get(f"{api}/gettoken",
                                    params={"corpid": settings.wecom_corp_id, "corpsecret": settings.wecom_secret})
        try:
            reply = resp.json()
        except ValueError:
            reply = None
        if not isinstance(reply, dict) or reply.get("errcode", 0) != 0 or not reply.get("access_token"):
            raise RuntimeError(f"WeCom gettoken failed: {str(reply)[:200]}")
        return reply["access_token"], float(reply.get("expires_in", 7200))

    tokens = TokenCache(fetch_token)

    async def send(user: str, body: dict) -> None:
        agent = settings.wecom_agent_id
        message = {"touser": user, "agentid": int(agent) if str(agent).isdigit() else agent, **body}
        reply = None
        for attempt in (0, 1):
            token = await tokens.get(refresh=attempt == 1)
            reply = await post_json(f"{api}/message/send", message, params={"access_token": token})
            code = reply.get("errcode") if isinstance(reply, dict) else None
            if code == 0:
                return
            if code not in _TOKEN_ERRORS:
                break
        log.warning("kb.bots: WeCom message/send failed: %s", str(reply)[:300])

    @router.get("/wecom")
    async def wecom_verify_url(request: Request):
        """The URL check WeCom runs when the callback is saved: return the decrypted echostr."""
        key = configured()
        echostr = request.query_params.get("echostr")
        if echostr:
            echostr = echostr.replace(" ", "+")  # base64 has no spaces: an unencoded "+" was decoded to " "
        check(request.query_params, echostr)
        return PlainTextResponse(open_message(key, echostr))

    @router.post("/wecom")
    async def wecom_message(request: Request, tasks: BackgroundTasks):
        key = configured()
        outer = parse_xml(await request.body())
        encrypted = (outer.findtext("Encrypt") or "").strip()
        check(request.query_params, encrypted)
        msg = parse_xml(open_message(key, encrypted))
        if (msg.findtext("MsgType") or "").strip() != "text":
            return Response(status_code=200)
        user = (msg.findtext("FromUserName") or "").strip()
        text = (msg.findtext("Content") or "").strip()
        msg_id = (msg.findtext("MsgId") or "").strip()
        # A user id never holds "|" or "@": refuse anything that message/send would fan out (@all, a|b).
        if not user or "|" in user or "@" in user:
            return Response(status_code=200)
        if not seen_messages.first_time(msg_id or None):
            return Response(status_code=200)
        searches = request.app.state.searches

        async def answer() -> None:
            ans = await answer_for(searches if text else None, settings, text, "wecom", user)
            await send(user, to_wecom(ans))

        tasks.add_task(background("wecom message/send", answer))
        return Response(status_code=200)

    return router


# -- rendering ------------------------------------------------------------------

WECOM_MAX_BYTES = 2048        # message/send markdown.content limit


# WeCom Markdown: no fenced code blocks (code lines are shown as a quote), 2048 bytes at most.

def _wecom_code(code: str, lang: str) -> str:
    return "\n".join("> " + (line.replace("`", "'") or " ") for line in code.split("\n"))


WECOM = Style(
    escape=defang_tags,
    escape_code=lambda s: defuse_mentions(defang_tags(s)),  # quoted lines, not a code block
    bold=lambda s: f"**{s}**" if s.strip() else s,
    link=md_link,
    code=_wecom_code,
)


def _fit_bytes(text: str, limit: int, tail: str) -> str:
    if len(text.encode("utf-8")) <= limit:
        return text
    room = limit - len(tail.encode("utf-8")) - 4
    cut = text.encode("utf-8")[: max(room, 0)].decode("utf-8", "ignore")
    return cut.rstrip() + "…\n" + tail


def to_wecom(answer: Answer) -> dict:
    content = "\n".join("\n".join(s) for s in render_sections(answer, WECOM))
    if answer.items:
        tail = plain_link(WECOM, answer.w["trimmed"], answer.items[0].url)
    else:
        tail = ""
    return {"msgtype": "markdown", "markdown": {"content": _fit_bytes(content, WECOM_MAX_BYTES, tail)}}
