"""`kb search` against a running server (KB_URL): no index or model loaded in the CLI."""

from __future__ import annotations

import httpx

from kb.errors import KbError
from kb.text import clean


def search_remote(url: str, query: str, top_k: int) -> dict:
    try:  # clean(): a lone surrogate cannot be sent as UTF-8 JSON
        resp = httpx.post(url.rstrip("/") + "/v1/search", json={"query": clean(query), "top_k": top_k}, timeout=60)
    except httpx.HTTPError as exc:
        raise KbError(f"cannot reach kb server at {url}: {exc}. Is `kb serve` running? Unset KB_URL to search locally.") from None
    if resp.status_code >= 400:
        try:
            detail = resp.json().get("detail") or resp.text
        except ValueError:
            detail = resp.text
        raise KbError(f"kb server at {url} answered {resp.status_code}: {detail}")
    return resp.json()
