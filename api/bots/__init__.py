"""Chat-ops bots: one module per platform, one shared answer formatter."""

from __future__ import annotations

from fastapi import APIRouter

from ..settings import ApiSettings


def build_router(settings: ApiSettings) -> APIRouter:
    """All bot routes; a platform without credentials answers 404."""
    return APIRouter(prefix="/bots", tags=["bots"])
