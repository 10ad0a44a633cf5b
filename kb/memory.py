"""Keep a long-running process's memory flat: two glibc malloc settings (no-ops elsewhere).

Measured in `scripts/soak.py` (10 min of searches and a write every 3 s): without them the
server's RSS grew linearly, ~9 MB a minute in each search process and ~7 % in 4 minutes in
the HTTP process; with them both stay flat.
"""

from __future__ import annotations

import ctypes
import gc
import os

_M_ARENA_MAX = -8  # mallopt parameter


def _glibc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


_LIBC = _glibc()


def limit_malloc_arenas(arenas: int = 2) -> None:
    """glibc gives each new thread its own malloc arena, and a server's thread pools keep making
    threads. Set for this process and the processes it starts; an explicit MALLOC_ARENA_MAX wins."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return
    os.environ["MALLOC_ARENA_MAX"] = str(arenas)  # read by child processes at start
    if _LIBC is not None:
        _LIBC.mallopt(_M_ARENA_MAX, arenas)


def release_freed_memory() -> None:
    """Hand memory freed by a dropped index snapshot back to the OS.

    Its large arrays, freed, stay in the heap where the next snapshot's allocations only
    partly fit (glibc raises its mmap threshold after large frees): measured +0.5 MB per
    snapshot switch without this, flat with it.
    """
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
