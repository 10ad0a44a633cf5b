"""Mattermost: a custom slash command (`/kb <error>`).

Mattermost POSTs the command as a form (channel_id, channel_name, command, response_url,
team_domain, team_id, text, token, trigger_id, user_id, user_name) and sends the same token
as `Authorization: Token <token>`. The `token` is compared with KB_MATTERMOST_TOKEN in
constant time. The reply is the response body: `{"response_type", "text"}` (Markdown).

Documented choice: a confident answer is posted `in_channel` (everyone in the channel
benefits); a "no clear match" answer, usage help and errors are `ephemeral` (only the
person who asked sees them, no noise for the channel).
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ..settings import ApiSettings
from .common import answer_for, denied, require, same_secret
from .format import Answer, md_code, md_link, render_sections, Style


def build_router(settings: ApiSettings) -> APIRouter:
    router = APIRouter()

    @router.post("/mattermost")
    async def mattermost_command(request: Request):
        require(settings, "Mattermost", mattermost_token=settings.mattermost_token)
        body = await request.body()
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        token = form.get("token")
        if not token:
            scheme, _, value = request.headers.get("authorization", "").partition(" ")
            token = value.strip() if scheme.lower() == "token" else None
        if not token:
            raise denied("missing Mattermost token: the slash command's `token` field is required")
        if not same_secret(token, settings.mattermost_token):
            raise denied("wrong Mattermost token: set KB_MATTERMOST_TOKEN to the slash command's token")
        text = form.get("text", "").strip()
        answer = await answer_for(request.app.state.searches if text else None, settings, text, "mattermost",
                                  form.get("user_id") or None)
        return JSONResponse({
            "response_type": "in_channel" if answer.confident else "ephemeral",
            "text": to_mattermost(answer),
        })

    return router


# -- rendering: Mattermost Markdown; raw HTML is not rendered, mentions are already defused ------

def md_escape(text: str) -> str:
    """Escaping `&`, `<`, `>` keeps text literal in Mattermost's Markdown."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


MATTERMOST = Style(
    escape=md_escape,
    escape_code=lambda s: s,
    bold=lambda s: f"**{s}**" if s.strip() else s,
    link=md_link,
    code=md_code,
)


def to_mattermost(answer: Answer) -> str:
    return "\n\n".join("\n".join(s) for s in render_sections(answer, MATTERMOST))
