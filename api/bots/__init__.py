"""Chat-ops bots: one module per platform, one shared answer formatter (`format.py`).

Routes (all under `/bots`; each platform answers 404 until its secrets are set):
- `POST /bots/slack/commands`, `POST /bots/slack/events`   (slack.py)
- `POST /bots/mattermost`                                  (mattermost.py)
- `POST /bots/dingtalk`                                    (dingtalk.py)
- `POST /bots/feishu`                                      (feishu.py)
- `GET|POST /bots/wecom`                                   (wecom.py)
Setup per platform: docs/BOTS.md.
"""

from __future__ import annotations

from fastapi import APIRouter

from ..settings import ApiSettings
from . import dingtalk, feishu, mattermost, slack, wecom


def build_router(settings: ApiSettings) -> APIRouter:
    """All bot routes; a platform without credentials answers 404."""
    router = APIRouter(prefix="/bots", tags=["bots"])
    for module in (slack, mattermost, dingtalk, feishu, wecom):
        router.include_router(module.build_router(settings))
    return router
