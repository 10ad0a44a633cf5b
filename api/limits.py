"""Limits at the edge: over-large request bodies rejected before they are read, votes per client."""

from __future__ import annotations

import json
import time
from collections import deque

FEEDBACK_PER_MINUTE = 30


class BodyLimitMiddleware:
    """ASGI middleware: 413 when Content-Length, or the streamed body, passes `max_bytes`."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = False
                if too_big:
                    return await self._reject(send)
        seen = 0
        started = False
        overflowed = False

        async def limited_receive():
            nonlocal seen, overflowed
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    overflowed = True
                    raise _TooLarge()
            return message

        async def tracking_send(message):
            nonlocal started
            if overflowed:
                # The app caught _TooLarge and answered itself (FastAPI turns any error while
                # reading a JSON body into 400 "There was an error parsing the body"): say 413.
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await self._reject(send)
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send):
        body = json.dumps({"detail": f"request body over {self.max_bytes} bytes; send at most 64 KB of error text"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


class PerClientLimit:
    """At most `per_minute` calls per client address in any sliding minute (one process's view)."""

    def __init__(self, per_minute: int, max_clients: int = 10_000):
        self.per_minute, self.max_clients = per_minute, max_clients
        self._seen: dict[str, deque] = {}

    def allow(self, client: str) -> bool:
        now = time.monotonic()
        hits = self._seen.setdefault(client, deque())
        while hits and now - hits[0] > 60:
            hits.popleft()
        if len(hits) >= self.per_minute:
            return False
        hits.append(now)
        if len(self._seen) > self.max_clients:  # forget the quietest clients first
            for key in [k for k, v in self._seen.items() if not v][: len(self._seen) // 2] or list(self._seen)[:1]:
                self._seen.pop(key, None)
        return True
