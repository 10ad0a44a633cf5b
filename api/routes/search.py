"""POST /v1/search: the pasted error in, ranked articles out."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..deps import SearchesDep
from ..schemas import ErrorBody, SearchRequest, SearchResponsePublic

router = APIRouter(prefix="/v1", tags=["search"])


@router.post(
    "/search",
    response_model=SearchResponsePublic,
    responses={413: {"model": ErrorBody}, 422: {"model": ErrorBody}, 503: {"model": ErrorBody}},
)
async def search(body: SearchRequest, request: Request, searches: SearchesDep) -> dict:
    """Find the articles that explain an error: root cause, fix, confidence.

    The search is recorded for `/v1/gaps` as its masked error line only (KB_RECORD_SEARCHES=0
    turns that off); its `search_id` is what `/v1/feedback` refers to."""
    door = "web" if request.headers.get("x-kb-door") == "web" else "api"
    client = request.client.host if request.client else None
    response = await searches.search(body.query, body.top_k, door=door, client=client)
    return response.as_dict()
