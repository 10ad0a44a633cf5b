"""Slack: a slash command (`/kb <error>`) and the Events API (`@kb <error>` in a channel or a DM).

Verification (https://api.slack.com/authentication/verifying-requests-from-slack):
`X-Slack-Signature` = "v0=" + hex(HMAC-SHA256(signing secret, f"v0:{X-Slack-Request-Timestamp}:{raw body}")),
compared in constant time; a timestamp more than 5 minutes from now is refused (replays).

- Slash commands must be acknowledged within 3 s: we answer at once with an ephemeral
  "Searching…" and post the answer to the command's `response_url` from a background task.
- Events: `url_verification` is answered with its `challenge`; `app_mention` (and direct
  messages, `message` with `channel_type` "im") are acknowledged at once and answered in the
  thread with `chat.postMessage`. Every `event_id` is answered at most once: a redelivery
  (`X-Slack-Retry-Num`) of an event already taken is acknowledged with 200 and dropped; a retry
  whose first delivery never arrived (Slack's `connection_failed`) is answered.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, BackgroundTasks, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from kb.errors import KbError

from ..settings import ApiSettings
from .common import Dedupe, answer_for, background, denied, log, post_json, require, seen_events_path
from .format import Answer, render_sections, reply_lang, searching_text, Style, ZWSP

REPLAY_WINDOW_S = 5 * 60
_USER_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
_SPECIAL = re.compile(r"<![^>]*>")
_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>")


def sign(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify(secret: str, headers, body: bytes, now: float | None = None) -> None:
    """Raise 401 unless the request carries a fresh, valid Slack signature."""
    timestamp = headers.get("x-slack-request-timestamp")
    signature = headers.get("x-slack-signature")
    if not timestamp or not signature:
        raise denied("missing Slack signature: X-Slack-Request-Timestamp and X-Slack-Signature are required")
    try:
        ts = int(timestamp)
    except ValueError:
        raise denied("bad X-Slack-Request-Timestamp") from None
    if abs((now or time.time()) - ts) > REPLAY_WINDOW_S:
        raise denied("stale Slack request: the timestamp is more than 5 minutes from the server's clock")
    if not hmac.compare_digest(sign(secret, timestamp, body).encode(), signature.encode()):
        raise denied("bad Slack signature: check KB_SLACK_SIGNING_SECRET (Basic Information > Signing Secret)")


def clean_text(text: str) -> str:
    """Slack message text -> what the user typed: mentions removed, links unwrapped, entities decoded."""
    text = _USER_MENTION.sub(" ", text or "")
    text = _SPECIAL.sub(" ", text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()


def response_url_allowed(url: str, api_base: str) -> bool:
    """Only post to Slack's own hosts (or the configured API base), never to an arbitrary URL."""
    try:
        u, b = urlsplit(url), urlsplit(api_base)
    except ValueError:
        return False
    host = (u.hostname or "").lower()
    if u.scheme == "https" and (host in ("slack.com", "slack-gov.com") or host.endswith((".slack.com", ".slack-gov.com"))):
        return True
    return bool(host) and (u.scheme, host, u.port) == (b.scheme, (b.hostname or "").lower(), b.port)


def build_router(settings: ApiSettings) -> APIRouter:
    router = APIRouter()
    seen_events = Dedupe(seen_events_path(settings, "slack"))

    def configured(events: bool = False) -> None:
        fields = {"slack_signing_secret": settings.slack_signing_secret}
        if events:
            fields["slack_bot_token"] = settings.slack_bot_token
        require(settings, "Slack", **fields)

    @router.post("/slack/commands")
    async def slack_command(request: Request, tasks: BackgroundTasks):
        """Slash command: acknowledge now (ephemeral), answer through `response_url`."""
        configured()
        body = await request.body()
        verify(settings.slack_signing_secret, request.headers, body)
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        text = clean_text(form.get("text", ""))
        response_url = form.get("response_url", "")
        if not text:
            return JSONResponse({"response_type": "ephemeral", **to_slack(await answer_for(None, settings, ""))})
        if not response_url_allowed(response_url, settings.slack_api_base):
            raise HTTPException(400, "response_url is missing or not a Slack URL")
        searches = request.app.state.searches

        async def answer() -> None:
            ans = await answer_for(searches, settings, text, "slack", form.get("user_id") or None)
            payload = {"response_type": "in_channel" if ans.confident else "ephemeral",
                       "replace_original": False, **to_slack(ans)}
            await post_json(response_url, payload)

        tasks.add_task(background("slack response_url", answer))
        return JSONResponse({"response_type": "ephemeral", "text": searching_text(reply_lang(text))})

    @router.post("/slack/actions")
    async def slack_actions(request: Request):
        """Interactivity: a click on an answer's 👍/👎 button, signed like every Slack request.
        Recorded as feedback for `kb gaps`; it never changes the ranking by itself."""
        configured()
        body = await request.body()
        verify(settings.slack_signing_secret, request.headers, body)
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        try:
            payload = json.loads(form.get("payload", ""))
        except ValueError:
            raise HTTPException(400, "the interaction has no JSON `payload`") from None
        if not isinstance(payload, dict) or payload.get("type") != "block_actions":
            return JSONResponse({"ok": True})
        user = str((payload.get("user") or {}).get("id") or "") or None
        kb = request.app.state.kb
        for action in payload.get("actions") or []:
            helpful = SLACK_FEEDBACK_ACTIONS.get(action.get("action_id")) if isinstance(action, dict) else None
            if helpful is None:
                continue
            try:
                vote = json.loads(action.get("value") or "")
                await run_in_threadpool(kb.feedback, str(vote["s"]), str(vote["a"]), helpful, None, f"slack:{user}")
            except (ValueError, KeyError, TypeError, KbError) as exc:
                log.warning("kb.bots: slack feedback not recorded: %s", exc)
        return JSONResponse({"ok": True})

    @router.post("/slack/events")
    async def slack_events(request: Request, tasks: BackgroundTasks):
        """Events API: url_verification, app_mention and direct messages."""
        configured(events=True)
        body = await request.body()
        verify(settings.slack_signing_secret, request.headers, body)
        try:
            payload = json.loads(body)
        except ValueError:
            raise HTTPException(400, "the body is not valid JSON") from None
        if not isinstance(payload, dict):
            raise HTTPException(400, "the body is not a Slack event")
        if payload.get("type") == "url_verification":
            return JSONResponse({"challenge": payload.get("challenge", "")})
        if payload.get("type") != "event_callback":
            return JSONResponse({"ok": True})
        if not seen_events.first_time(payload.get("event_id")):
            # A redelivery (X-Slack-Retry-Num) of an event this server already took: acknowledge only.
            return JSONResponse({"ok": True}, headers={"X-Slack-No-Retry": "1"})
        # A retry whose first delivery never reached us (e.g. connection_failed) is answered once.
        event = payload.get("event") or {}
        wanted = event.get("type") == "app_mention" or (event.get("type") == "message" and event.get("channel_type") == "im")
        if not wanted or event.get("bot_id") or event.get("subtype") or not event.get("channel"):
            return JSONResponse({"ok": True})
        text = clean_text(event.get("text", ""))
        channel = event["channel"]
        thread_ts = event.get("thread_ts") or event.get("ts")
        searches = request.app.state.searches

        async def answer() -> None:
            ans = await answer_for(searches, settings, text, "slack", event.get("user") or None)
            message = {"channel": channel, **to_slack(ans), "unfurl_links": False, "unfurl_media": False}
            if thread_ts:
                message["thread_ts"] = thread_ts
            reply = await post_json(
                f"{settings.slack_api_base.rstrip('/')}/chat.postMessage", message,
                headers={"Authorization": f"Bearer {settings.slack_bot_token}"},
            )
            if isinstance(reply, dict) and not reply.get("ok"):
                log.warning("kb.bots: Slack chat.postMessage failed: %s", reply.get("error"))

        tasks.add_task(background("slack chat.postMessage", answer))
        return JSONResponse({"ok": True})

    return router


# -- rendering ------------------------------------------------------------------

SLACK_SECTION_MAX = 3000      # a section block's text limit


# Slack: mrkdwn; `&`, `<`, `>` must be escaped (that also defuses <!channel>, <@U…>, <url|…>).

def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_bold(text: str) -> str:
    text = text.replace("*", "∗")
    return f"*{text}*" if text.strip() else text


SLACK = Style(
    escape=slack_escape,
    escape_code=slack_escape,
    bold=_slack_bold,
    link=lambda label, url: f"<{url}|{slack_escape(label)}>",
    code=lambda code, lang: "```\n" + code.replace("```", "`" + ZWSP + "``") + "\n```",
)


def to_slack(answer: Answer) -> dict:
    sections = render_sections(answer, SLACK)
    text = "\n\n".join("\n".join(s) for s in sections)
    blocks = []
    for i, lines in enumerate(sections):
        body = "\n".join(lines)
        if len(body) > SLACK_SECTION_MAX:
            body = body[: SLACK_SECTION_MAX - 1] + "…"
        if answer.kind == "answer" and i == len(sections) - 1:
            blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": body}]})
        else:
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": body}})
    if answer.search_id and answer.items and answer.kind in ("answer", "maybe"):
        blocks.append(slack_feedback_buttons(answer))
    return {"text": text, "blocks": blocks}


SLACK_FEEDBACK_ACTIONS = {"kb_helpful": True, "kb_not_helpful": False}


def slack_feedback_buttons(answer: Answer) -> dict:
    """👍/👎 on the top result; the click comes back, signed, to /bots/slack/actions."""
    value = json.dumps({"s": answer.search_id, "a": answer.items[0].article_id}, separators=(",", ":"))
    zh = answer.lang == "zh"
    return {"type": "actions", "block_id": "kb_feedback", "elements": [
        {"type": "button", "action_id": "kb_helpful", "value": value,
         "text": {"type": "plain_text", "text": "👍 有帮助" if zh else "👍 Helpful", "emoji": True}},
        {"type": "button", "action_id": "kb_not_helpful", "value": value,
         "text": {"type": "plain_text", "text": "👎 不是这个" if zh else "👎 Not this", "emoji": True}},
    ]}
