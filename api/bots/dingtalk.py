"""DingTalk (钉钉): an enterprise-internal robot in "HTTP mode" (outgoing: @kb in a group).

Verification (outgoing robot docs): headers `timestamp` (ms) and `sign`, where
sign = base64(HMAC-SHA256(key=AppSecret, msg=f"{timestamp}\\n{AppSecret}")); a timestamp more
than one hour from the server's clock is refused. Both must check out before anything runs.

The body carries `msgtype: "text"`, `text.content` (the message with the @robot part removed),
`senderStaffId`, `conversationType`, `sessionWebhook`, …. The answer goes back in the response
body as a `markdown` message, which DingTalk posts into the conversation. (The
`sessionWebhook` is not used: the search answers well within DingTalk's wait.)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import replace

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

from ..settings import ApiSettings
from .common import answer_for, denied, require
from .format import Answer, defang_tags, md_code, md_link, render_sections, Style

WINDOW_MS = 60 * 60 * 1000


def sign(app_secret: str, timestamp: str) -> str:
    msg = f"{timestamp}\n{app_secret}".encode("utf-8")
    return base64.b64encode(hmac.new(app_secret.encode("utf-8"), msg, hashlib.sha256).digest()).decode()


def verify(app_secret: str, headers, now_ms: float | None = None) -> None:
    timestamp, signature = headers.get("timestamp"), headers.get("sign")
    if not timestamp or not signature:
        raise denied("missing DingTalk signature: the `timestamp` and `sign` headers are required")
    try:
        ts = int(timestamp)
    except ValueError:
        raise denied("bad DingTalk `timestamp` header (milliseconds expected)") from None
    now_ms = time.time() * 1000 if now_ms is None else now_ms
    if abs(now_ms - ts) > WINDOW_MS:
        raise denied("stale DingTalk request: the timestamp is more than one hour from the server's clock")
    if not hmac.compare_digest(sign(app_secret, timestamp).encode(), signature.strip().encode()):
        raise denied("bad DingTalk signature: check KB_DINGTALK_APP_SECRET (the robot's AppSecret)")


def build_router(settings: ApiSettings) -> APIRouter:
    router = APIRouter()

    @router.post("/dingtalk")
    async def dingtalk_robot(request: Request):
        require(settings, "DingTalk", dingtalk_app_secret=settings.dingtalk_app_secret)
        verify(settings.dingtalk_app_secret, request.headers)
        try:
            payload = json.loads(await request.body())
        except ValueError:
            raise HTTPException(400, "the body is not valid JSON") from None
        if not isinstance(payload, dict):
            raise HTTPException(400, "the body is not a DingTalk robot message")
        text = ""
        if payload.get("msgtype", "text") == "text":
            text = str((payload.get("text") or {}).get("content", "")).strip()
        user = str(payload.get("senderStaffId") or payload.get("senderId") or "") or None
        answer = await answer_for(request.app.state.searches if text else None, settings, text, "dingtalk", user)
        return JSONResponse(to_dingtalk(answer))

    return router


# -- rendering: DingTalk Markdown, tags defanged ----------------------------------

DINGTALK = Style(
    escape=defang_tags,
    escape_code=defang_tags,
    bold=lambda s: f"**{s}**" if s.strip() else s,
    link=md_link,
    code=md_code,
)


def to_dingtalk(answer: Answer) -> dict:
    """Markdown; an answer that can be rated is an actionCard whose 👍/👎 buttons open kb's signed vote links."""
    # DingTalk's Markdown needs a blank line to break a line.
    sections = render_sections(replace(answer, vote_urls=None), DINGTALK)
    text = "\n\n".join("\n\n".join(s) for s in sections)
    title = defang_tags(answer.title)[:60] or "kb"
    if not answer.vote_urls:
        return {"msgtype": "markdown", "markdown": {"title": title, "text": text}}
    zh = answer.lang == "zh"
    buttons = [{"title": "👍 有帮助" if zh else "👍 Helpful", "actionURL": answer.vote_urls[0]},
               {"title": "👎 不是这个" if zh else "👎 Not this", "actionURL": answer.vote_urls[1]}]
    return {"msgtype": "actionCard", "actionCard": {"title": title, "text": text, "btnOrientation": "1", "btns": buttons}}
