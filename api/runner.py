"""Run the core's blocking work off the event loop, with the per-request time limit.

Two lanes:
- searches (`SearchLane`): CPU-bound, so they never share a process's GIL with each other.
  With one worker they run one at a time on a dedicated thread; with `search_processes`
  >= 2 (`kb serve --workers N`, one per core by default) they go into one queue served by
  that many processes (kb.pool), so every core is used however the clients connect.
  Many searches in threads of one process only took turns on the GIL, and the encoder
  gives it up and waits to take it back for every op: under load the slowest requests
  got several times slower with no gain in throughput.
- reads (an article, stats) run on the shared thread pool, so health checks never queue
  behind searches;
- writes (`WriteLane`) run one at a time on their own thread: they take the data dir's
  writer lock anyway, and many writers waiting for it on the shared pool used to take all
  its threads, so `/healthz` and article reads stalled behind them (12 s, measured).

A write that is not done within the request limit is answered honestly: still queued, it
is cancelled and the client is told it was not applied; already running, it will finish,
and the client is told so. Writes are idempotent (the same article twice is a no-op that
answers `created: false`), so retrying either way is safe.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from fastapi import HTTPException
from starlette.concurrency import run_in_threadpool

from kb.pool import SearchPool, SearchPoolBroken
from kb.results import SearchResponse
from kb.service import KnowledgeBase

from .settings import ApiSettings


async def _within_limit(settings: ApiSettings, work) -> object:
    try:
        return await asyncio.wait_for(work, timeout=settings.request_timeout_s)
    except asyncio.TimeoutError:
        raise HTTPException(503, f"the request took longer than {settings.request_timeout_s:.0f}s; try a shorter paste or retry") from None


async def run_blocking(settings: ApiSettings, fn, *args, **kwargs):
    return await _within_limit(settings, run_in_threadpool(functools.partial(fn, *args, **kwargs)))


class WriteLane:
    """The API's writes, one at a time on a thread of their own."""

    def __init__(self, settings: ApiSettings):
        self.settings = settings
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="kb-write")

    async def run(self, fn, *args):
        future = self._thread.submit(fn, *args)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=self.settings.request_timeout_s)
        except asyncio.TimeoutError:
            limit = f"{self.settings.request_timeout_s:.0f}s"
            if future.cancel():
                raise HTTPException(503, f"other writes kept this one waiting over {limit}; it was NOT applied: "
                                         "retry it", headers={"Retry-After": "5"}) from None
            raise HTTPException(503, f"the write is taking over {limit}; it is still being applied and will be "
                                     "visible when done. Retrying the same request is safe (writes are "
                                     "idempotent): it answers created=false once applied.",
                                headers={"Retry-After": "5"}) from None

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)


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

    async def search(self, query: str, top_k: int, door: str | None = None, client: str | None = None) -> SearchResponse:
        if self.pool:
            work = asyncio.wrap_future(self.pool.submit(query, top_k, door, client))
        else:
            work = asyncio.get_running_loop().run_in_executor(
                self._thread, functools.partial(self.kb.search, query, top_k, door=door, client=client))
        try:
            return await _within_limit(self.settings, work)
        except BrokenProcessPool:
            raise SearchPoolBroken() from None

    def close(self) -> None:
        if self.pool:
            self.pool.close()
        else:
            self._thread.shutdown(wait=False, cancel_futures=True)
