"""Searches spread over worker processes, each with its own copy of the index and model.

Why: a search is CPU-bound Python, so one process uses one core, and threads of one
process only take turns on the GIL. A server that gave each process its own clients
(uvicorn's `--workers`) left cores idle whenever the kernel handed most keep-alive
connections to one process (measured: all 16 of 16 on one worker in two of three runs,
halving throughput). Here every search goes into one queue and the first free process
takes it. Each process follows the data dir's live snapshot on its own, so a write
published by anyone is seen by the next search in every process.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from .config import Settings
from .errors import KbError
from .results import SearchResponse

_kb = None  # the KnowledgeBase of a worker process


def _start_worker(settings: Settings) -> None:
    """In each worker process, once: open the index and load the model before taking work."""
    global _kb
    from .service import KnowledgeBase

    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True, name="kb-parent-watch").start()

    _kb = KnowledgeBase(settings)
    try:
        _kb.warm()
    except KbError:
        pass  # no index yet: the search that needs it says so


def _exit_with_parent(parent: int) -> None:
    """A worker whose server was killed outright (kill -9) must not linger holding its memory."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _search(query: str, top_k: int, door: str | None = None, client: str | None = None) -> SearchResponse:
    return _kb.search(query, top_k, door=door, client=client)


def _ready() -> bool:
    return True


class SearchPoolBroken(KbError):
    """A search process died mid-search (killed, out of memory); the pool restarts it."""

    def __init__(self, message: str = "a search process died during this search; it has been restarted, try again"):
        super().__init__(message)


class SearchPool:
    """`processes` worker processes that answer `search` calls from one shared queue."""

    def __init__(self, settings: Settings, processes: int):
        self.settings, self.processes = settings, max(1, processes)
        self._lock = threading.Lock()
        self._executor = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        # spawn, never fork: the parent may hold torch's and OpenMP's threads and locks.
        return ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(self.settings,))

    def warm(self, timeout: float | None = None) -> None:
        """Start every process now (each loads the index and model) rather than on first use."""
        futures = [self._submit(_ready) for _ in range(self.processes)]
        for f in futures:
            f.result(timeout=timeout)

    def submit(self, query: str, top_k: int = 5, door: str | None = None, client: str | None = None) -> Future:
        """A future of the SearchResponse; domain errors (empty query, no index) come out of it as raised."""
        return self._submit(_search, query, top_k, door, client)

    def search(self, query: str, top_k: int = 5, door: str | None = None, client: str | None = None) -> SearchResponse:
        try:
            return self.submit(query, top_k, door, client).result()
        except BrokenProcessPool:
            raise SearchPoolBroken() from None

    def _submit(self, fn, *args) -> Future:
        with self._lock:
            try:
                return self._executor.submit(fn, *args)
            except BrokenProcessPool:  # a process died earlier: replace the whole pool once
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = self._new_executor()
                return self._executor.submit(fn, *args)

    def close(self) -> None:
        with self._lock:
            self._executor.shutdown(wait=True, cancel_futures=True)
