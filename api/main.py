"""The FastAPI app: routes per resource, domain errors mapped to HTTP at the edge.

Heavy state (index, embedding model, segmenter) is loaded once in `lifespan`.
"""

from __future__ import annotations

import difflib
import logging
from contextlib import asynccontextmanager
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from kb.errors import (
    ArticleError,
    IndexBusyError,
    IndexMismatchError,
    IndexMissingError,
    KbError,
    NotFoundError,
    QueryError,
    QueryTooLargeError,
)
from kb.pool import SearchPoolBroken
from kb.service import KnowledgeBase

from .limits import FEEDBACK_PER_MINUTE, BodyLimitMiddleware, PerClientLimit
from .runner import SearchLane, WriteLane
from .bots import build_router as build_bot_router
from .guards import EdgeGuardMiddleware, redact_access_log
from .routes import articles, docs, health, loop, search, web
from .settings import ApiSettings

log = logging.getLogger("kb.api")

_STATUS = [
    (QueryTooLargeError, 413),
    (QueryError, 422),
    (NotFoundError, 404),
    (ArticleError, 422),
    (IndexBusyError, 503),
    (IndexMissingError, 503),
    (IndexMismatchError, 503),
    (SearchPoolBroken, 503),
    (KbError, 400),
]


def _error(status: int, detail: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def _describe_validation(exc: RequestValidationError, known: tuple[str, ...] = ()) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        if err.get("type") == "json_invalid":
            return "the body is not valid JSON: send {\"query\": \"...\", \"top_k\": 5}"
        if err.get("type") == "extra_forbidden":
            close = difflib.get_close_matches(loc, known, n=1, cutoff=0.0) if known else []
            hint = f"; did you mean `{close[0]}`?" if close else ""
            parts.append(f"unknown field `{loc}`{hint} (fields: {', '.join(f'`{k}`' for k in known)})")
            continue
        parts.append(f"{loc or 'body'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _body_fields(request: Request) -> tuple[str, ...]:
    """The JSON fields the matched route's body model accepts (for 'did you mean')."""
    field = getattr(request.scope.get("route"), "body_field", None)
    model = getattr(getattr(field, "field_info", None), "annotation", None)
    return tuple(getattr(model, "model_fields", {}) or ())


def create_app(settings: ApiSettings | None = None, kb: KnowledgeBase | None = None) -> FastAPI:
    settings = settings or ApiSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if app.state.kb is None:
            app.state.kb = KnowledgeBase(settings)
        app.state.searches = SearchLane(app.state.kb, settings)
        app.state.writes = WriteLane(settings)
        try:
            app.state.searches.warm()
        except KbError as exc:
            log.warning("kb: index not ready yet: %s", exc)
        try:
            yield
        finally:
            app.state.searches.close()
            app.state.writes.close()

    app = FastAPI(
        title="kb",
        version="0.1.0",
        summary="Paste an ML training or serving error; get the root cause and the fix.",
        lifespan=lifespan,
        docs_url=None,  # served by routes/docs.py from local assets: /docs works offline
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.kb = kb
    app.state.feedback_limit = PerClientLimit(FEEDBACK_PER_MINUTE)
    redact_access_log()
    app.add_middleware(EdgeGuardMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)  # outermost: size first

    @app.exception_handler(KbError)
    async def kb_error(request: Request, exc: KbError):
        for cls, status in _STATUS:
            if isinstance(exc, cls):
                headers = {"Retry-After": "2"} if status == 503 else None
                return _error(status, str(exc), headers)
        return _error(400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        return _error(422, _describe_validation(exc, _body_fields(request)))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception):
        log.exception("kb: unexpected error on %s %s", request.method, request.url.path)
        return _error(500, "internal error: the server log has the details")

    app.include_router(search.router)
    app.include_router(articles.router)
    app.include_router(loop.router)
    app.include_router(health.router)
    app.include_router(build_bot_router(settings))
    app.include_router(web.router)
    app.include_router(docs.router)
    return app
