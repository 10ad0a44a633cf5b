"""POST /v1/search: the pasted error in, ranked articles out."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import SearchesDep
from ..schemas import ErrorBody, SearchRequest, SearchResponsePublic

router = APIRouter(prefix="/v1", tags=["search"])


@router.post(
    "/search",
    response_model=SearchResponsePublic,
    responses={413: {"model": ErrorBody}, 422: {"model": ErrorBody}, 503: {"model": ErrorBody}},
)
async def search(body: SearchRequest, searches: SearchesDep) -> dict:
    """Find the articles that explain an error: root cause, fix, confidence."""
    response = await searches.search(body.query, body.top_k)
    return response.as_dict()
