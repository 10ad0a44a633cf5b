"""Edge guards every route gets, bots included, before any route code or authentication runs.

- JSON bodies nested deeper than `MAX_JSON_DEPTH` are refused with 400 before anything parses
  them (a 100k-deep array makes Python's parser raise RecursionError: a 500 without this).
- kb's JSON routes take invalid UTF-8 leniently (U+FFFD), as the CLI does; the core cleans lone
  surrogates (kb/text.py).
- JSON-only routes answer 415 with a message to a body of another content type.
- Every response says `X-Content-Type-Options: nosniff`; an HTML page without its own policy
  gets a strict Content-Security-Policy.
- The access log never shows a query string: `/?q=` share links carry a whole paste, and a
  misplaced `?token=` a secret. Pastes are private; secrets are only accepted in headers.
"""

from __future__ import annotations

import json
import logging

from kb.text import decode

MAX_JSON_DEPTH = 32
JSON_ONLY = {("POST", "/v1/search"), ("POST", "/v1/feedback"), ("POST", "/web/search")}
DEFAULT_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
               "base-uri 'none'; frame-ancestors 'none'; form-action 'self'")


def json_depth_over(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when brackets outside strings nest deeper than `limit` (a linear scan, no parsing)."""
    depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def lenient_utf8(body: bytes) -> bytes:
    """Invalid UTF-8 (a terminal's stray bytes in a pasted log) becomes U+FFFD instead of a refused body.
    Only for kb's own JSON routes: a bot's body is signed byte for byte and must reach it unchanged."""
    try:
        body.decode("utf-8")
        return body
    except UnicodeDecodeError:
        return decode(body).encode("utf-8")


def _is_json(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


class EdgeGuardMiddleware:
    """ASGI middleware: the checks above; the body is passed on byte for byte (bots verify signatures over it)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def secured_send(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                names = {name.lower() for name, _ in headers}
                if b"x-content-type-options" not in names:
                    headers.append((b"x-content-type-options", b"nosniff"))
                ctype = next((v for n, v in headers if n.lower() == b"content-type"), b"")
                if ctype.startswith(b"text/html") and b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", DEFAULT_CSP.encode()))
                message = {**message, "headers": headers}
            await send(message)

        if scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, secured_send)

        content_type = next((v.decode("latin-1") for n, v in scope.get("headers", ()) if n == b"content-type"), "")
        if (scope["method"], scope["path"].rstrip("/")) in JSON_ONLY and not _is_json(content_type):
            return await _reject(secured_send, 415, f"send the body as JSON with `Content-Type: application/json` "
                                                    f"(got {content_type or 'no content type'!r}), "
                                                    'e.g. {"query": "CUDA out of memory", "top_k": 5}')
        chunks, more = [], True
        while more:  # the body limit middleware outside this one has already bounded its size
            message = await receive()
            if message["type"] != "http.request":
                return await self.app(scope, receive, secured_send)
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if (scope["method"], scope["path"].rstrip("/")) in JSON_ONLY:
            body = lenient_utf8(body)
        if (_is_json(content_type) or body.lstrip()[:1] in (b"{", b"[")) and json_depth_over(body):
            return await _reject(secured_send, 400, f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels; "
                                                    "kb's requests are flat objects")
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, secured_send)


async def _reject(send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class RedactQueryStrings(logging.Filter):
    """uvicorn.access records carry (client, method, path with query, http version, status): drop the query."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], args[2].split("?", 1)[0] + "?[redacted]", *args[3:])
        return True


def redact_access_log() -> None:
    """Install the filter once on uvicorn's access logger."""
    logger = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactQueryStrings) for f in logger.filters):
        logger.addFilter(RedactQueryStrings())
