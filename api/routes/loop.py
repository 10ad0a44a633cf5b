"""The knowledge loop over HTTP: feedback on a search, and the gaps an admin closes (kb/loop.py)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Query, Request

from kb.loop import parse_since

from ..deps import AdminDep, KbDep, SettingsDep, WritesDep
from ..limits import FEEDBACK_PER_MINUTE
from ..runner import run_blocking
from ..schemas import ErrorBody, FeedbackRequest, GapLinked, GapLinkRequest, GapsPublic

router = APIRouter(prefix="/v1", tags=["knowledge loop"])


def client_of(request: Request) -> str | None:
    return request.client.host if request.client else None


@router.post("/feedback", status_code=204,
             responses={404: {"model": ErrorBody}, 422: {"model": ErrorBody}, 429: {"model": ErrorBody}})
async def feedback(body: FeedbackRequest, request: Request, kb: KbDep, settings: SettingsDep) -> None:
    """Say whether a result helped (👍/👎). Votes are shown to admins in `/v1/gaps`; they never
    change the ranking by themselves."""
    client = client_of(request) or "unknown"
    if not request.app.state.feedback_limit.allow(client):
        raise HTTPException(429, f"too many votes from this address: at most {FEEDBACK_PER_MINUTE} a minute",
                            headers={"Retry-After": "60"})
    await run_blocking(settings, kb.feedback, body.search_id, body.article_id, body.helpful, body.comment, client)


@router.get("/gaps", response_model=GapsPublic, dependencies=[AdminDep],
            responses={401: {"model": ErrorBody}, 403: {"model": ErrorBody}})
async def gaps(kb: KbDep, settings: SettingsDep,
               since: str | None = Query(None, description="Only searches this recent: 7d, 12h, 30m.", examples=["7d"]),
               include_linked: bool = Query(False, description="Also list gaps already linked to an article.")) -> dict:
    """Errors users searched for that no article answered (or that got a 👎), grouped by masked
    error line and ranked by how many people hit them."""
    found = await run_blocking(settings, kb.gaps, parse_since(since), include_linked)
    return {"gaps": [g.as_dict() for g in found]}


@router.post("/gaps/{gap_id}/link", response_model=GapLinked, dependencies=[AdminDep],
             responses={401: {"model": ErrorBody}, 403: {"model": ErrorBody}, 404: {"model": ErrorBody}})
async def link_gap(gap_id: str, body: GapLinkRequest, kb: KbDep, writes: WritesDep) -> dict:
    """Confirm that an article answers a gap: the gap's error line is added to the article's
    `error_lines` front matter and the article is re-indexed; the same paste is then answered by it."""
    path = await writes.run(kb.link_gap, gap_id, body.article_id)
    return {"gap_id": gap_id, "article_id": body.article_id, "file": path}
