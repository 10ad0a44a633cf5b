"""Run the core's blocking work off the event loop, with the per-request time limit.

Two lanes:
- searches (`SearchLane`): CPU-bound, so they never share a process's GIL with each other.
  With one worker they run one at a time on a dedicated thread; with `search_processes`
  >= 2 (`kb serve --workers N`, one per core by default) they go into one queue served by
  that many processes (kb.pool), so every core is used however the clients connect.
  Many searches in threads of one process only took turns on the GIL, and the encoder
  gives it up and waits to take it back for every op: under load the slowest requests
  got several times slower with no gain in throughput.
- everything else (an article, stats, an index build for a write) runs on the shared
  thread pool, so health checks and writes never queue behind searches.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from fastapi import HTTPException
from starlette.concurrency import run_in_threadpool

from kb.pool import SearchPool, SearchPoolBroken
from kb.search import SearchResponse
from kb.service import KnowledgeBase

from .settings import ApiSettings


async def _within_limit(settings: ApiSettings, work) -> object:
    try:
        return await asyncio.wait_for(work, timeout=settings.request_timeout_s)
    except asyncio.TimeoutError:
        raise HTTPException(503, f"the request took longer than {settings.request_timeout_s:.0f}s; try a shorter paste or retry") from None


async def run_blocking(settings: ApiSettings, fn, *args, **kwargs):
    return await _within_limit(settings, run_in_threadpool(functools.partial(fn, *args, **kwargs)))


class SearchLane:
    """Where the API's searches run: one thread here, or a pool of search processes."""

    def __init__(self, kb: KnowledgeBase, settings: ApiSettings):
        self.kb, self.settings = kb, settings
        self.pool = SearchPool(kb.settings, settings.search_processes) if settings.search_processes > 1 else None
        self._thread = None if self.pool else ThreadPoolExecutor(1, thread_name_prefix="kb-search")

    def warm(self) -> None:
        """Load the index and model now (in every search process) rather than on the first query."""
        if self.pool:
            self.pool.warm()
        else:
            self.kb.warm()

    async def search(self, query: str, top_k: int) -> SearchResponse:
        if self.pool:
            work = asyncio.wrap_future(self.pool.submit(query, top_k))
        else:
            work = asyncio.get_running_loop().run_in_executor(self._thread, self.kb.search, query, top_k)
        try:
            return await _within_limit(self.settings, work)
        except BrokenProcessPool:
            raise SearchPoolBroken() from None

    def close(self) -> None:
        if self.pool:
            self.pool.close()
        else:
            self._thread.shutdown(wait=False, cancel_futures=True)
