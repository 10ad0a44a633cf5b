"""Reject over-large request bodies before they are read into memory."""

from __future__ import annotations

import json


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
