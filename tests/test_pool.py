"""Searches spread over worker processes (kb.pool): same answers, errors intact, survives a dead worker."""

from __future__ import annotations

import os
import signal
import time

import pytest

from kb.errors import QueryError
from kb.pool import SearchPool, SearchPoolBroken

pytestmark = pytest.mark.slow  # starts real processes

QUERIES = [
    "NCCL watchdog caught collective operation timeout ALLREDUCE",
    "Invalidate trace cache @ step 12: expected module 4, but got module 88",
    "请问批量生成的时候报 Asking to pad but the tokenizer does not have a padding token 怎么办？",
]


@pytest.fixture
def pool(kb):
    p = SearchPool(kb.settings, processes=2)
    p.warm(timeout=120)
    yield p
    p.close()


def _worker_pids(pool: SearchPool) -> list[int]:
    return [p.pid for p in pool._executor._processes.values()]


def test_pool_answers_like_the_process_itself(kb, pool):
    futures = [pool.submit(q, 3) for q in QUERIES * 4]  # more searches than processes: they queue
    for q, f in zip(QUERIES * 4, futures):
        here = kb.search(q, 3)
        there = f.result(timeout=60)
        assert [r.article_id for r in there.results] == [r.article_id for r in here.results]
        assert there.confident == here.confident
        assert there.results[0].fix == here.results[0].fix


def test_pool_raises_the_same_domain_errors(pool):
    with pytest.raises(QueryError, match="empty"):
        pool.search("   ")


def test_pool_recovers_when_a_search_process_dies(pool):
    assert len(_worker_pids(pool)) == 2
    victim = _worker_pids(pool)[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    answered = replaced = False
    while time.monotonic() < deadline and not (answered and replaced):
        try:
            answered = pool.search(QUERIES[0]).results[0].article_id == "nccl-p2p-hang"
        except SearchPoolBroken as exc:  # a search in flight when the pool noticed may be lost; it says so
            assert "try again" in str(exc)
        replaced = victim not in _worker_pids(pool)
        time.sleep(0.05)
    assert answered and replaced
    assert pool.search(QUERIES[1]).results[0].article_id == "zero3-trace-cache"
