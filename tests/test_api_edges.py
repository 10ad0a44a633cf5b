"""Hostile and messy requests at the HTTP edge: a clear 4xx, never a 5xx, nothing logged that is private."""

from __future__ import annotations

import logging

import pytest

from api.guards import MAX_JSON_DEPTH, RedactQueryStrings, json_depth_over

from conftest import ADMIN_TOKEN

DEEP = b"[" * 100_000 + b"]" * 100_000
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def test_json_depth_scan_ignores_brackets_inside_strings():
    assert json_depth_over(b"[" * (MAX_JSON_DEPTH + 1))
    assert not json_depth_over(b'{"query": "' + b"[" * 10_000 + b'"}')
    assert not json_depth_over(b'{"a": "\\"[[[[", "b": [[1]]}')


@pytest.mark.parametrize("path", ["/v1/search", "/v1/articles", "/bots/feishu", "/bots/slack/events"])
def test_deeply_nested_json_is_a_400_on_every_route_before_any_parsing(client, path):
    resp = client.post(path, content=DEEP, headers={"content-type": "application/json", **AUTH})
    assert resp.status_code == 400, resp.text
    assert "nested deeper" in resp.json()["detail"]


def test_a_lone_surrogate_in_a_query_is_answered(client):
    resp = client.post("/v1/search", content=b'{"query": "CUDA out of memory \\ud800 \\udfff"}',
                       headers={"content-type": "application/json"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["verdict"] in ("answer", "maybe", "none")


def test_invalid_utf8_in_a_query_is_read_leniently_and_answered(client):
    resp = client.post("/v1/search", content=b'{"query": "CUDA out of memory \xff\xfe bytes"}',
                       headers={"content-type": "application/json"})
    assert resp.status_code == 200, resp.text
    assert "\ufffd" in " ".join(resp.json()["signature"]["lines"] + [""]) or resp.json()["results"]


def test_a_non_ascii_admin_token_is_a_401_not_a_500(client):
    resp = client.post("/v1/articles", content=b"x", headers={"Authorization": b"Bearer \xed\xa0\x80\xff",
                                                              "content-type": "text/markdown"})
    assert resp.status_code == 401


def test_a_surrogate_in_the_feishu_verification_token_is_a_401_not_a_500(kb, api_settings):
    from fastapi.testclient import TestClient

    from api.main import create_app

    settings = api_settings.model_copy(update=dict(feishu_app_id="cli_x", feishu_app_secret="s",
                                                   feishu_verification_token="vtoken"))
    with TestClient(create_app(settings, kb=kb)) as c:
        resp = c.post("/bots/feishu", content=b'{"type": "url_verification", "challenge": "c", "token": "\\ud800"}',
                      headers={"content-type": "application/json"})
        assert resp.status_code == 401, resp.text


def test_a_body_that_is_not_json_gets_415_with_what_to_send(client):
    resp = client.post("/v1/search", content=b"query=CUDA+out+of+memory",
                       headers={"content-type": "application/x-www-form-urlencoded"})
    assert resp.status_code == 415
    assert "application/json" in resp.json()["detail"]
    assert client.post("/v1/search", content=b'{"query": "x"}').status_code == 415  # no content type at all


def test_an_unknown_field_is_rejected_naming_the_right_one(client):
    resp = client.post("/v1/search", json={"query": "CUDA out of memory", "k": 1})
    assert resp.status_code == 422
    assert "unknown field `k`" in resp.json()["detail"] and "`top_k`" in resp.json()["detail"]


@pytest.mark.parametrize("path", ["/healthz", "/v1/articles/nope", "/", "/docs"])
def test_every_response_says_nosniff_and_html_has_a_csp(client, path):
    resp = client.get(path)
    assert resp.headers["x-content-type-options"] == "nosniff"
    if resp.headers.get("content-type", "").startswith("text/html"):
        assert "default-src 'self'" in resp.headers["content-security-policy"]


def test_docs_load_from_this_server_only(client):
    page = client.get("/docs")
    assert page.status_code == 200
    assert "http://" not in page.text and "https://" not in page.text and "<script>" not in page.text
    for asset in ("/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css", "/docs/start.js"):
        assert client.get(asset).status_code == 200, asset
    assert client.get("/docs/assets/../../secrets").status_code == 404


def test_the_access_log_never_shows_a_query_string():
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "GET", "/?q=/home/alice/secret-project+token=ghp_abc", "1.1", 200), None)
    RedactQueryStrings().filter(record)
    line = record.getMessage()
    assert "alice" not in line and "ghp_abc" not in line and "/?[redacted]" in line


GOOD_ARTICLE = "---\nid: api-edge-{n}\ntitle: Edge {n}\n---\n\n## Error\n\nRuntimeError: edge case {n}\n"


def _app_client(kb, api_settings, **changes):
    from fastapi.testclient import TestClient

    from api.main import create_app

    return TestClient(create_app(api_settings.model_copy(update=changes), kb=kb))


def test_a_write_past_the_limit_says_whether_it_was_applied_and_a_retry_is_safe(kb, api_settings):
    with _app_client(kb, api_settings, request_timeout_s=1.0) as c:
        with kb.data.writer_lock():
            resp = c.post("/v1/articles", content=GOOD_ARTICLE.format(n=7), headers={"content-type": "text/markdown", **AUTH})
        assert resp.status_code == 503
        assert "still being applied" in resp.json()["detail"] and "safe" in resp.json()["detail"]
        first = c.post("/v1/articles", content=GOOD_ARTICLE.format(n=7), headers={"content-type": "text/markdown", **AUTH})
        assert first.status_code in (200, 201)
        again = c.post("/v1/articles", content=GOOD_ARTICLE.format(n=7), headers={"content-type": "text/markdown", **AUTH})
        assert again.status_code == 200 and again.json() == {"article_id": "api-edge-7", "created": False}


def test_an_article_write_of_another_type_gets_415(client):
    resp = client.post("/v1/articles", content=b"a=b", headers={"content-type": "application/x-www-form-urlencoded", **AUTH})
    assert resp.status_code == 415 and "text/markdown" in resp.json()["detail"]
