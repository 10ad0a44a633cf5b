"""Articles: read by id; add, replace and delete with the admin token."""

from __future__ import annotations

import json

import yaml
from fastapi import APIRouter, HTTPException, Request, Response

from ..deps import AdminDep, KbDep, SettingsDep, WritesDep
from ..runner import run_blocking
from ..schemas import ArticleCreate, ArticlePublic, ArticleWritten, ErrorBody

router = APIRouter(prefix="/v1/articles", tags=["articles"])
ARTICLE_TYPES = ("application/json", "text/markdown", "text/x-markdown", "text/plain", "")


@router.get("/{article_id}", response_model=ArticlePublic, responses={404: {"model": ErrorBody}})
async def get_article(article_id: str, kb: KbDep, settings: SettingsDep) -> dict:
    return await run_blocking(settings, kb.get_article, article_id)


def _markdown_from(payload: ArticleCreate) -> str:
    if payload.markdown:
        return payload.markdown
    if not (payload.id and payload.body):
        raise HTTPException(422, "send either `markdown` (an article with front matter) or at least `id` and `body`")
    front = {"id": payload.id, "title": payload.title, "lang": payload.lang, "tags": payload.tags, "source": payload.source}
    front = {k: v for k, v in front.items() if v not in (None, [])}
    return f"---\n{yaml.safe_dump(front, allow_unicode=True, sort_keys=False)}---\n\n{payload.body}\n"


@router.post(
    "",
    response_model=ArticleWritten,
    status_code=201,
    dependencies=[AdminDep],
    responses={200: {"model": ArticleWritten}, 401: {"model": ErrorBody}, 403: {"model": ErrorBody}, 422: {"model": ErrorBody}},
    openapi_extra={"requestBody": {"content": {
        "application/json": {"schema": ArticleCreate.model_json_schema()},
        "text/markdown": {"schema": {"type": "string"}},
    }, "required": True}},
)
async def create_article(request: Request, response: Response, kb: KbDep, writes: WritesDep) -> dict:
    """Add or replace an article. Body: Markdown with front matter (text/markdown), or JSON.

    Idempotent: sending the same article again changes nothing and answers 200 `created: false`,
    so a client may retry a write whose answer it did not get (or that answered 503)."""
    raw = await request.body()
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in ARTICLE_TYPES:
        raise HTTPException(415, f"send the article as text/markdown (Markdown with front matter) or "
                                 f"application/json, not {ctype!r}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(422, "the body is not valid UTF-8") from None
    if ctype == "application/json":
        try:
            payload = ArticleCreate.model_validate(json.loads(text))
        except (ValueError, TypeError) as exc:
            raise HTTPException(422, f"the body is not a valid article JSON: {str(exc)[:300]}") from None
        text = _markdown_from(payload)
    article_id, created = await writes.run(kb.add_article, text)
    response.status_code = 201 if created else 200
    return {"article_id": article_id, "created": created}


@router.delete("/{article_id}", status_code=204, dependencies=[AdminDep],
               responses={401: {"model": ErrorBody}, 403: {"model": ErrorBody}, 404: {"model": ErrorBody}})
async def delete_article(article_id: str, kb: KbDep, writes: WritesDep) -> Response:
    await writes.run(kb.delete_article, article_id)
    return Response(status_code=204)
