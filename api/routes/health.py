"""GET /healthz: is the index loaded, how big, which model and format."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import KbDep, SettingsDep
from ..runner import run_blocking
from ..schemas import ErrorBody, Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, responses={503: {"model": ErrorBody}})
async def healthz(kb: KbDep, settings: SettingsDep) -> dict:
    return {"status": "ok", **(await run_blocking(settings, kb.stats))}
