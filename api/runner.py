"""Run the core's blocking work off the event loop, with the per-request time limit."""

from __future__ import annotations

import asyncio
import functools

from fastapi import HTTPException
from starlette.concurrency import run_in_threadpool

from .settings import ApiSettings


async def run_blocking(settings: ApiSettings, fn, *args, **kwargs):
    try:
        return await asyncio.wait_for(
            run_in_threadpool(functools.partial(fn, *args, **kwargs)), timeout=settings.request_timeout_s
        )
    except asyncio.TimeoutError:
        raise HTTPException(503, f"the request took longer than {settings.request_timeout_s:.0f}s; try a shorter paste or retry") from None
