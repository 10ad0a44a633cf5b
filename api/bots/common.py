"""Pieces every bot shares: the search call, off-by-default, dedupe, outbound HTTP, safe XML."""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import sqlite3
import threading
import time
import xml.etree.ElementTree as ET
from collections import OrderedDict
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import urlencode

import httpx
from fastapi import HTTPException

from kb.errors import KbError

from ..runner import SearchLane
from ..settings import ApiSettings
from .format import Answer, build_answer, empty_answer, error_answer, is_absolute

log = logging.getLogger("kb.bots")

TOP_K = 3
OUTBOUND_TIMEOUT_S = 10.0


def require(settings: ApiSettings, platform: str, **fields: str | None) -> None:
    """404 while any of the platform's settings is unset: a bot without secrets is off, never open."""
    missing = [f"KB_{name.upper()}" for name, value in fields.items() if not value]
    if missing:
        raise HTTPException(404, f"the {platform} bot is off on this server: set {', '.join(missing)} to enable it")


def denied(reason: str) -> HTTPException:
    """401 for a request whose signature or token does not check out (no search is run)."""
    return HTTPException(401, reason)


def same_secret(given: str | bytes | None, expected: str | bytes) -> bool:
    """Constant-time comparison; a missing value never matches."""
    if given is None:
        return False
    if isinstance(given, str):  # surrogatepass: a lone surrogate from a JSON escape is a mismatch, not a crash
        given = given.encode("utf-8", "surrogatepass")
    if isinstance(expected, str):
        expected = expected.encode("utf-8", "surrogatepass")
    return hmac.compare_digest(given, expected)


async def answer_for(searches: SearchLane | None, settings: ApiSettings, text: str,
                     door: str | None = None, user: str | None = None) -> Answer:
    """Search the knowledge base for a chat message and build the neutral answer. `door` (the
    platform) and `user` are what the knowledge loop records beside the masked error line."""
    text = (text or "").strip()
    if not text:
        return empty_answer(text)
    try:
        response = await searches.search(text, TOP_K, door=door, client=f"{door}:{user}" if user else None)
    except KbError as exc:
        return error_answer(text, str(exc))
    except HTTPException as exc:  # the search's time limit
        return error_answer(text, str(exc.detail))
    except Exception:  # noqa: BLE001 - a bot must answer something
        log.exception("kb.bots: search failed")
        return error_answer(text, "internal error; the server log has the details")
    answer = build_answer(response, text, settings.public_url)
    if door in VOTE_LINK_DOORS and answer.kind == "answer" and answer.search_id and is_absolute(settings.public_url):
        answer.vote_urls = vote_urls(searches.kb, settings.public_url, answer.search_id, answer.items[0].article_id)
    return answer


VOTE_LINK_DOORS = ("dingtalk", "wecom", "mattermost")
"""Platforms whose replies cannot carry buttons that call kb back: their answers carry signed vote links."""


def vote_urls(kb, public_url: str, search_id: str, article_id: str) -> tuple[str, str]:
    """👍/👎 links to the web page's /vote (a confirmation page: a link preview alone records nothing)."""
    def url(helpful: bool) -> str:
        query = urlencode({"s": search_id, "a": article_id, "h": int(helpful),
                           "t": kb.vote_token(search_id, article_id, helpful)})
        return f"{public_url.rstrip('/')}/vote?{query}"
    return url(True), url(False)


class Dedupe:
    """Remembers event ids seen recently: platforms redeliver on slow or lost acks.

    Kept in a small SQLite table in the data dir, so an event redelivered after a restart,
    or to another server process over the same data dir, is still answered once; in
    memory (this process only) when the data dir cannot be written.
    """

    def __init__(self, path: Path | None = None, ttl_s: float = 24 * 3600, max_items: int = 10_000):
        self.ttl_s, self.max_items = ttl_s, max_items
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._path = path  # opened on first use: a bot that is off writes nothing
        self._db: sqlite3.Connection | None = None
        self._calls = 0

    def _open(self) -> None:
        path, self._path = self._path, None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=5.0, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY, at REAL NOT NULL)")
            self._db = db
        except (OSError, sqlite3.Error) as exc:
            log.warning("kb.bots: cannot keep seen events in %s (%s); remembering them per process", path, exc)

    def first_time(self, key: str | None) -> bool:
        """True the first time `key` is seen (and records it); an empty key is always new."""
        if not key:
            return True
        with self._lock:
            if self._path is not None:
                self._open()
            if self._db is not None:
                try:
                    return self._first_time_shared(key)
                except sqlite3.Error as exc:
                    log.warning("kb.bots: seen-events table failed (%s); remembering events per process", exc)
                    self._db = None
            return self._first_time_here(key)

    def _first_time_shared(self, key: str) -> bool:
        now = time.time()  # wall clock: shared between processes
        self._calls += 1
        if self._calls % 500 == 1:
            self._db.execute("DELETE FROM seen WHERE at < ?", (now - self.ttl_s,))
        return self._db.execute("INSERT OR IGNORE INTO seen VALUES (?, ?)", (key, now)).rowcount == 1

    def _first_time_here(self, key: str) -> bool:
        now = time.monotonic()
        while self._seen:
            oldest, at = next(iter(self._seen.items()))
            if now - at <= self.ttl_s and len(self._seen) < self.max_items:
                break
            self._seen.popitem(last=False)
        if key in self._seen:
            return False
        self._seen[key] = now
        return True


def seen_events_path(settings: ApiSettings, platform: str) -> Path:
    """Where a platform's seen event ids are kept: shared by server processes, kept across restarts."""
    return Path(settings.data_dir) / "bots" / f"{platform}-seen.sqlite"


class TokenCache:
    """An access token fetched by `fetch() -> (token, lifetime_s)`, reused until shortly before expiry."""

    def __init__(self, fetch: Callable[[], Awaitable[tuple[str, float]]]):
        self._fetch = fetch
        self._token: str | None = None
        self._expires = 0.0
        self._lock = asyncio.Lock()

    async def get(self, refresh: bool = False) -> str:
        async with self._lock:
            if refresh or not self._token or time.monotonic() >= self._expires:
                token, lifetime = await self._fetch()
                self._token = token
                self._expires = time.monotonic() + max(60.0, float(lifetime) - 300.0)
            return self._token


def http_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=OUTBOUND_TIMEOUT_S, follow_redirects=False)


async def post_json(url: str, payload: dict, *, headers: dict | None = None, params: dict | None = None) -> Any:
    """POST JSON; returns the decoded JSON reply (or None), logs HTTP errors instead of raising."""
    async with http_client() as client:
        resp = await client.post(url, json=payload, headers=headers, params=params)
    if resp.status_code >= 400:
        log.warning("kb.bots: POST %s -> HTTP %s: %s", _redact(url), resp.status_code, resp.text[:300])
    try:
        return resp.json()
    except ValueError:
        return None


def _redact(url: str) -> str:
    return re.sub(r"(access_token|corpsecret)=[^&]+", r"\1=***", url)


def background(name: str, coro_fn: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    """Wrap a background job so a failure is logged, never raised into the server."""

    async def run() -> None:
        try:
            await coro_fn()
        except Exception:  # noqa: BLE001
            log.exception("kb.bots: %s failed", name)

    return run


_XML_DANGER = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.I)


def parse_xml(data: bytes | str) -> ET.Element:
    """Parse a small XML document after refusing DTDs and entity declarations (XXE, billion laughs)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if _XML_DANGER.search(raw):
        raise HTTPException(400, "XML with a DOCTYPE or ENTITY declaration is not accepted")
    try:
        return ET.fromstring(raw)
    except ET.ParseError as exc:
        raise HTTPException(400, f"the body is not valid XML: {exc}") from None
