"""Dependencies shared by the routes: the knowledge base, settings, the admin check."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request

from kb.service import KnowledgeBase

from .runner import SearchLane, WriteLane
from .settings import ApiSettings


def get_kb(request: Request) -> KnowledgeBase:
    return request.app.state.kb


def get_settings(request: Request) -> ApiSettings:
    return request.app.state.settings


def get_searches(request: Request) -> SearchLane:
    return request.app.state.searches


def get_writes(request: Request) -> WriteLane:
    return request.app.state.writes


KbDep = Annotated[KnowledgeBase, Depends(get_kb)]
SettingsDep = Annotated[ApiSettings, Depends(get_settings)]
SearchesDep = Annotated[SearchLane, Depends(get_searches)]
WritesDep = Annotated[WriteLane, Depends(get_writes)]


def require_admin(request: Request, settings: SettingsDep) -> None:
    """Writes need `Authorization: Bearer <KB_ADMIN_TOKEN>`; with no token configured they are off."""
    if not settings.admin_token:
        raise HTTPException(403, "writes are disabled on this server: set KB_ADMIN_TOKEN to enable them")
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(401, "missing admin token: send `Authorization: Bearer <KB_ADMIN_TOKEN>`",
                            headers={"WWW-Authenticate": "Bearer"})
    if not hmac.compare_digest(token.strip().encode("utf-8", "surrogatepass"), settings.admin_token.encode()):
        raise HTTPException(401, "wrong admin token", headers={"WWW-Authenticate": "Bearer"})


AdminDep = Depends(require_admin)
