"""The web page: paste an error, read the answer (served from api/static)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
