"""The web page: `/` (paste box + result cards) and `/articles/{id}` (server-rendered, safe).

Two layers:
- TestClient tests (fast): HTML, headers (strict CSP), 404s, and that an article's raw
  HTML / script / javascript: links come out escaped or dropped.
- Browser tests (`slow`): a real uvicorn server over the fixture index and Debian's
  Chromium driven by Playwright — paste, Ctrl+Enter, read the card, copy the fix,
  `/?q=` links, size limit, the core's verdict and reason in words (and for `none`: no article,
  related articles, how to add one), API errors, the language
  switch, and XSS payloads that must stay inert on the article page and in the cards.
  Screenshots go to `test-artifacts/`. Skipped only when /usr/bin/chromium is absent.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from conftest import ADMIN_TOKEN, REPO, ThreadedServer

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = REPO / "test-artifacts"
CSP = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

NCCL_TITLE = "NCCL all_reduce hangs on PCIe machines until the watchdog fires"
OOM_TITLE = "CUDA out of memory only during evaluation"

NCCL_PASTE = """\
[rank1]:[E1122 03:12:44.118452 2291 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.
[rank1]:[E1122 03:12:44.118901 2291 ProcessGroupNCCL.cpp:1785] [PG 0 (default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 1, last enqueued NCCL work: 1, last completed NCCL work: -1.
[rank1]:[E1122 03:12:44.119002 2291 ProcessGroupNCCL.cpp:630] [Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[rank1]:[E1122 03:12:44.119010 2291 ProcessGroupNCCL.cpp:636] [Rank 1] To avoid data inconsistency, we are taking the entire process down.
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG 0 (default_pg) Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.
Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3c5a2b9446 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x282 (0x7f3c0f1d2772 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)
W1122 03:12:45.551000 139921 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 2290 closing signal SIGTERM
E1122 03:12:46.102000 139921 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) local_rank: 1 (pid: 2291) of binary: /usr/bin/python3"""

OOM_PASTE = """\
{'loss': 1.0412, 'grad_norm': 0.83, 'learning_rate': 1.8e-05, 'epoch': 0.41}
***** Running Evaluation *****
  Num examples = 4000
  Batch size = 8
Traceback (most recent call last):
  File "/home/alice/proj/train.py", line 88, in <module>
    trainer.train()
  File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 2732, in _maybe_log_save_evaluate
    metrics = self.evaluate(ignore_keys=ignore_keys_for_eval)
  File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 3594, in evaluation_loop
    logits = self.accelerator.gather_for_metrics((logits))
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.81 GiB. GPU 3 has a total capacity of 39.39 GiB of which 1.12 GiB is free."""

# Every payload sets window.__kbXss (or opens a dialog) if it ever runs.
XSS_ARTICLE = """\
---
id: xss-test
title: "XSS probe <img src=x onerror=\\"window.__kbXss='title'\\"> title"
lang: en
tags: [xss, "<b>bold-tag</b>"]
source: "javascript:window.__kbXss='source'"
---

# XSS probe

## Error

```text
KbXssProbeError: the payload marker zq7f3a9 was rendered by the page renderer
```

## Root cause

<script>window.__kbXss = 'script'; alert('script')</script>

Raw HTML <img src=x onerror="window.__kbXss='img'; alert('img')"> inside a sentence.

## Fix

Click [this link](javascript:window.__kbXss='link') or <a href="javascript:alert('a')">this one</a>.

<svg onload="window.__kbXss='svg'"></svg>

```bash
echo "<script>alert('code')</script>"
```
"""
XSS_QUERY = "KbXssProbeError: the payload marker zq7f3a9 was rendered by the page renderer"

# An error from another ecosystem: the fixture corpus has no article for it (the core's verdict is `none`).
NONE_QUERY = "npm ERR! code ERESOLVE unable to resolve dependency tree"
# What the page says for each verdict, (en, zh): the heading of #verdict and the top card's badge.
VERDICT_WORDS = {
    "answer": (("Confident answer", "Confident match"), ("有把握的答案", "有把握的答案")),
    "maybe": (("Possible match — check it against your error", "Possible match"),
              ("可能匹配：请先核对它和你的报错是否一致", "可能匹配")),
    "none": (("The knowledge base has no article for this error", "Related, not a match"),
             ("知识库里没有针对这个报错的文章", "相关但不是同一问题")),
}


def api_verdict(server, query: str) -> dict:
    """What the API itself answers (the page must show exactly this verdict and reason)."""
    body = httpx.post(server.url + "/v1/search", json={"query": query, "top_k": 5}, timeout=60).json()
    assert body["verdict"] in VERDICT_WORDS and body["reason"]
    return body


def reason_text(reason: str) -> str:
    return reason.replace("`", "")  # `code` spans are shown as <code>, without the backticks


def _add_xss_article(post) -> None:
    r = post("/v1/articles", content=XSS_ARTICLE.encode(),
             headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "text/markdown"})
    assert r.status_code in (200, 201), r.text


# -- TestClient: HTML, headers, escaping -------------------------------------------------


def test_index_is_html_with_strict_csp(client):
    r = client.get("/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["content-security-policy"].startswith(CSP)
    assert r.headers["x-content-type-options"] == "nosniff"
    page = r.text
    assert '<textarea id="q"' in page and '<label for="q"' in page
    assert '<script src="/static/app.js" defer></script>' in page
    # no inline script and no inline style attributes (the CSP would block them)
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page)
    assert " style=" not in page and "<style" not in page
    assert "http://" not in page and "https://" not in page  # nothing from a CDN


def test_static_files_are_served_and_nothing_else(client):
    for name, ctype in [("app.js", "javascript"), ("style.css", "text/css"), ("favicon.svg", "image/svg+xml")]:
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and ctype in r.headers["content-type"], name
    assert client.get("/static/nope.js").status_code == 404
    assert client.get("/static/article.html").status_code == 404  # a server template, not a page
    assert client.get("/static/..%2Froutes%2Fweb.py").status_code == 404


def test_article_page_renders(client):
    r = client.get("/articles/nccl-p2p-hang")
    assert r.status_code == 200
    assert r.headers["content-security-policy"].startswith(CSP)
    page = r.text
    assert f"<title>{NCCL_TITLE} · kb</title>" in page
    assert f">{NCCL_TITLE}</h1>" in page
    assert '<pre><code class="language-bash">export NCCL_P2P_DISABLE=1' in page
    assert "Root cause" in page and "ACS or IOMMU" in page
    assert "<script" not in page.replace('<script src="/static/app.js" defer></script>', "")


def test_article_page_in_chinese_from_accept_language(client):
    page = client.get("/articles/zero3-trace-cache", headers={"Accept-Language": "zh-CN,zh;q=0.9"}).text
    assert '<html lang="zh-CN">' in page and "根本原因" in page and "解决办法" in page
    assert "use_vllm: true" in page
    # the switch's cookie wins over the browser language
    client.cookies.set("kb_lang", "en")
    page = client.get("/articles/zero3-trace-cache", headers={"Accept-Language": "zh-CN"}).text
    assert '<html lang="en">' in page and "Root cause" in page


def test_unknown_article_is_404_page(client):
    r = client.get("/articles/nope")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["content-security-policy"].startswith(CSP)
    assert "Article not found" in r.text
    assert client.get("/articles/..%2F..%2Fetc%2Fpasswd").status_code == 404
    assert client.get("/articles/a/b").status_code == 404


def test_article_page_without_an_index_is_503_page(tmp_path, tokenizer):
    from fastapi.testclient import TestClient

    from api.main import create_app
    from api.settings import ApiSettings
    from kb.config import Settings
    from kb.service import KnowledgeBase

    empty = KnowledgeBase(Settings(data_dir=tmp_path / "empty", embed_model="hash"), tokenizer=tokenizer)
    with TestClient(create_app(ApiSettings(data_dir=tmp_path / "empty", embed_model="hash"), kb=empty)) as c:
        r = c.get("/articles/nccl-p2p-hang")
        assert r.status_code == 503 and r.headers["retry-after"]
        assert r.headers["content-type"].startswith("text/html") and "not ready" in r.text
        assert c.get("/").status_code == 200  # the page itself still loads


def test_xss_article_page_is_escaped(client):
    _add_xss_article(client.post)
    r = client.get("/articles/xss-test")
    assert r.status_code == 200
    page = r.text
    assert "&lt;script&gt;window.__kbXss = 'script'" in page
    assert "&lt;img src=x onerror=" in page
    assert "&lt;svg onload=" in page
    # the only script tag is the page's own
    assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/app.js" defer>']
    assert not re.search(r"<(img|svg|iframe|object)\b", page)
    assert not re.search(r"<[a-z][^>]*\son[a-z]+\s*=", page, re.I)  # no event-handler attribute on any tag
    assert "javascript:" not in " ".join(re.findall(r'href="([^"]*)"', page)).lower()
    assert "<b>bold-tag</b>" not in page and "&lt;b&gt;bold-tag&lt;/b&gt;" in page


def test_web_search_renders_root_cause_and_fix_as_inert_html(client):
    """The page's own search: Markdown rendered on the server, raw HTML escaped, unsafe links dropped."""
    _add_xss_article(client.post)
    r = client.post("/web/search", json={"query": XSS_QUERY, "top_k": 5})
    assert r.status_code == 200
    (hit,) = [x for x in r.json()["results"] if x["article_id"] == "xss-test"]
    rendered = hit["root_cause_html"] + hit["fix_html"] + hit["snippet_html"]
    assert "<p>" in rendered or "<pre>" in rendered
    assert not re.search(r"<(script|img|svg|iframe|object)\b", rendered)
    assert not re.search(r"<[a-z][^>]*\son[a-z]+\s*=", rendered, re.I)
    assert "javascript:" not in " ".join(re.findall(r'href="([^"]*)"', rendered)).lower()
    empty_web, empty_api = (client.post(path, json={"query": ""}) for path in ("/web/search", "/v1/search"))
    assert empty_web.status_code == empty_api.status_code >= 400 and empty_web.json() == empty_api.json()


def test_markdown_renderer_refuses_unsafe_links():
    from api.routes.web import render_markdown, safe_link

    for bad in ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "vbscript:x", "data:text/html,x", "file:///etc/passwd"]:
        assert not safe_link(bad), bad
    for good in ["https://example.com/a?b=1", "http://x.org", "mailto:a@b.c", "/articles/x", "#fix", "notes.md"]:
        assert safe_link(good), good
    for src in ["[x](javascript:alert(1))", "[x](&#106;avascript:alert(1))", "[x](javascript&colon;alert(1))",
                "<javascript:alert(1)>", "![x](data:image/svg+xml;base64,PHN2Zz4=)", "[x](java\tscript:alert(1))"]:
        out = render_markdown(src)
        assert "href" not in out and "src=" not in out, (src, out)
    out = render_markdown("[docs](https://example.com/x)")
    assert '<a href="https://example.com/x" rel="nofollow noopener noreferrer">docs</a>' in out
    assert render_markdown("<b onclick=x>hi</b>") == "<p>&lt;b onclick=x&gt;hi&lt;/b&gt;</p>\n"


def test_ui_strings_exist_in_both_languages(client):
    """Every `data-i18n` key a page uses, and every t('key') in app.js, has an English and a Chinese
    text in the one string table (the switch needs them)."""
    table = client.get("/static/strings.json").json()
    assert set(table["en"]) == set(table["zh"])
    used = set(re.findall(r"\bt\('(\w+)'", client.get("/static/app.js").text))
    for path in ["/", "/articles/zero3-trace-cache", "/articles/nope"]:
        page = client.get(path).text
        used |= set(re.findall(r'data-i18n(?:-aria-label)?="(\w+)"', page))
        assert 'name="kb-strings"' in page  # the page carries the table as data
    assert used and used <= set(table["en"]), used - set(table["en"])


# -- the browser -------------------------------------------------------------------------

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="browser tests need Debian's Chromium at /usr/bin/chromium (apt-get install -y chromium)",
)


@pytest.fixture
def server(kb, api_settings):
    from api.main import create_app

    with ThreadedServer(create_app(api_settings, kb=kb)) as s:
        yield s


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class _Page:
    """A fresh browser context + page that records dialogs, console errors and page errors."""

    def __init__(self, browser, base: str, **context):
        self.context = browser.new_context(base_url=base, **context)
        self.page = self.context.new_page()
        self.page.set_default_timeout(20_000)
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)


@pytest.fixture
def open_page(browser, server):
    made: list[_Page] = []

    def _open(**context) -> _Page:
        context.setdefault("viewport", {"width": 1280, "height": 900})
        context.setdefault("locale", "en-US")
        p = _Page(browser, server.url, **context)
        made.append(p)
        return p

    yield _open
    for p in made:
        p.context.close()


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


@pytest.mark.slow
@needs_chromium
def test_paste_traceback_ctrl_enter_shows_the_answer(open_page, server):
    p = open_page(permissions=["clipboard-read", "clipboard-write"])
    page = p.page
    page.goto("/")
    box = page.get_by_label("Paste an error message, a traceback or a log")
    box.fill(NCCL_PASTE)
    assert box.input_value() == NCCL_PASTE  # newlines kept
    assert page.locator("#q-count").inner_text().endswith("/ 64 KB")
    box.press("Control+Enter")

    card = page.locator(".card").first
    card.wait_for()
    assert card.locator(".card-title").inner_text() == NCCL_TITLE
    assert card.locator(".card-title a").get_attribute("href") == "/articles/nccl-p2p-hang"
    assert card.locator(".badge").inner_text().startswith("Confident match")
    assert "Watchdog caught collective operation timeout" in card.locator(".matched mark").inner_text()
    assert "ACS or IOMMU" in card.locator(".part.cause").inner_text()
    fix_code = card.locator(".part.fix pre code")
    assert fix_code.inner_text().strip() == "export NCCL_P2P_DISABLE=1"
    verdict = page.locator("#verdict")
    assert verdict.get_attribute("data-verdict") == "answer"
    assert verdict.locator("h3").inner_text() == "Confident answer"
    assert verdict.locator(".verdict-reason").inner_text().startswith("Why: ")
    assert page.locator("#how-to-add").count() == 0 and page.locator("#related-heading").count() == 0

    # this paste is over 2000 characters once URL-encoded: the link leaves it out and says so
    assert len(quote(NCCL_PASTE)) > 2000
    assert "?q=" not in page.url
    assert "too long for a shareable link" in page.locator("#results .note").inner_text()

    # copy button per code block
    card.locator(".part.fix .copy-btn").click()
    page.wait_for_function("document.querySelector('.part.fix .copy-btn').classList.contains('done')")
    assert page.evaluate("navigator.clipboard.readText()") == "export NCCL_P2P_DISABLE=1"

    _shot(page, "web-search-nccl.png")
    page.set_viewport_size({"width": 390, "height": 844})
    _shot(page, "web-search-nccl-narrow.png")

    # the title leads to the article page
    card.locator(".card-title a").click()
    page.wait_for_url("**/articles/nccl-p2p-hang")
    assert page.locator("h1").inner_text() == NCCL_TITLE
    assert "NCCL_P2P_DISABLE=1" in page.locator(".answer .fix").inner_text()
    assert page.locator(".answer .copy-btn").count() == 1
    _shot(page, "web-article-nccl.png")
    assert not p.dialogs and not p.errors, p.errors


@pytest.mark.slow
@needs_chromium
def test_query_in_url_runs_on_load(open_page):
    p = open_page()
    page = p.page
    page.goto("/?q=" + quote(OOM_PASTE))
    card = page.locator(".card").first
    card.wait_for()
    assert card.locator(".card-title").inner_text() == OOM_TITLE
    assert "eval_accumulation_steps" in card.locator(".part.fix").inner_text()
    assert page.locator("#q").input_value() == OOM_PASTE
    assert not p.errors, p.errors


@pytest.mark.slow
@needs_chromium
def test_xss_article_is_inert_on_article_page_and_in_cards(open_page, server):
    _add_xss_article(lambda path, **kw: httpx.post(server.url + path, **kw))
    p = open_page()
    page = p.page

    page.goto("/articles/xss-test")
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    main = page.locator("main")
    text = main.inner_text()
    assert "<script>window.__kbXss = 'script'; alert('script')</script>" in text
    assert "<img src=x onerror=\"window.__kbXss='img'; alert('img')\">" in text
    assert "XSS probe <img src=x onerror=" in page.locator("h1").inner_text()
    assert main.locator("img, svg, iframe, [onerror], [onload]").count() == 0
    assert page.locator("a[href^='javascript' i]").count() == 0
    assert page.evaluate("window.__kbXss") is None
    _shot(page, "web-article-xss.png")

    page.goto("/")
    page.locator("#q").fill(XSS_QUERY)
    page.locator("#q").press("Control+Enter")
    card = page.locator(".card[data-article-id='xss-test']")
    card.wait_for()
    page.locator(".card details summary").evaluate_all("els => els.forEach(e => e.click())")  # open collapsed fixes
    text = card.inner_text()
    assert "XSS probe <img src=x onerror=" in card.locator(".card-title").inner_text()
    assert "<script>window.__kbXss = 'script'; alert('script')</script>" in text
    assert "<img src=x onerror=\"window.__kbXss='img'; alert('img')\">" in text
    assert "this link" in text and "<svg onload=" in text
    assert page.locator("#results").locator("img, svg, iframe, script, [onerror], [onload]").count() == 0
    assert page.locator("a[href^='javascript' i]").count() == 0
    assert page.evaluate("window.__kbXss") is None
    _shot(page, "web-search-xss.png")
    assert not p.dialogs, p.dialogs
    assert not p.errors, p.errors


@pytest.mark.slow
@needs_chromium
def test_limits_long_links_and_no_confident_answer(open_page, server):
    p = open_page()
    page = p.page
    page.goto("/")
    searches: list[str] = []
    page.on("request", lambda r: searches.append(r.url) if r.url.endswith("/web/search") else None)

    # over 64 KB: refused in the page, with a clear message, and no request is sent
    box = page.locator("#q")
    box.fill(("x" * 99 + "\n") * 700)  # 70,000 bytes
    page.get_by_role("button", name="Search").click()
    error = page.locator("#q-error")
    assert error.is_visible() and "the limit is 64 KB" in error.inner_text()
    assert "over" in page.locator("#q-count").get_attribute("class")
    assert searches == []
    error.get_by_role("button", name="Keep the last 64 KB").click()
    assert error.is_hidden()
    assert len(box.input_value().encode()) <= 64 * 1024

    # a paste too long for a link still searches; the URL drops it and the page says so
    long_query = "how do I bake sourdough bread " + "with rye flour and a long cold proof " * 80
    box.fill(long_query)
    box.press("Control+Enter")
    page.locator(".results-head").wait_for()
    assert "?q=" not in page.url
    assert "too long for a shareable link" in page.locator("#results .note").inner_text()

    # nothing in the corpus explains it: the page says what the core decided (not an answer), and why
    body = api_verdict(server, long_query)
    assert body["verdict"] != "answer" and not body["confident"]
    notice = page.locator("#verdict")
    assert notice.is_visible() and notice.get_attribute("data-verdict") == body["verdict"]
    (heading, top_badge), _ = VERDICT_WORDS[body["verdict"]]
    assert notice.locator("h3").inner_text() == heading
    assert reason_text(body["reason"]) in notice.inner_text()
    badges = page.locator(".card .badge-word").all_inner_texts()
    assert badges[0] == top_badge and set(badges[1:]) <= {"Related"}
    assert "Confident" not in page.locator("#results").inner_text()
    _shot(page, "web-search-not-confident.png")
    assert not p.errors, p.errors


@pytest.mark.slow
@needs_chromium
def test_api_error_detail_and_loading_state(open_page):
    p = open_page()
    page = p.page
    page.goto("/")
    held = []  # hold the request so the loading state can be seen, then answer 503
    page.route("**/web/search", lambda route: held.append(route))
    page.locator("#q").fill("RuntimeError: CUDA error: device-side assert triggered")
    page.locator("#q").press("Control+Enter")
    page.wait_for_function("document.getElementById('results').getAttribute('aria-busy') === 'true'")
    assert page.locator("#search-btn-text").inner_text() == "Searching…"
    assert page.locator("#status").inner_text() == "Searching…"
    page.wait_for_timeout(100)
    assert len(held) == 1
    held[0].fulfill(status=503, content_type="application/json",
                    body='{"detail": "the index is being rebuilt: retry in a few seconds"}',
                    headers={"Retry-After": "2"})
    alert = page.locator("#results [role=alert]")
    alert.wait_for()
    assert "503" in alert.inner_text()
    assert "the index is being rebuilt: retry in a few seconds" in alert.inner_text()
    assert page.locator("#search-btn-text").inner_text() == "Search"
    assert page.locator("#results").get_attribute("aria-busy") == "false"


@pytest.mark.slow
@needs_chromium
def test_language_switch_persists_and_keyboard_works(open_page):
    p = open_page(locale="zh-CN")
    page = p.page
    page.goto("/")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    assert page.locator("#search-btn-text").inner_text() == "搜索"
    assert page.get_by_label("粘贴报错信息、完整的 traceback 或日志").count() == 1

    page.locator("#q").fill("Invalidate trace cache @ step 812: expected module 12, but got module 640")
    page.locator("#q").press("Control+Enter")
    card = page.locator(".card").first
    card.wait_for()
    # a short paste goes into the URL, so the result can be shared
    assert httpx.URL(page.url).params["q"] == "Invalidate trace cache @ step 812: expected module 12, but got module 640"
    assert page.locator("#results .note").count() == 0
    assert card.locator(".badge-word").inner_text() == "有把握的答案"
    assert card.locator(".part.cause h4").text_content() == "根本原因"
    _shot(page, "web-search-zh.png")

    page.get_by_role("button", name="Switch to English").click()
    assert page.locator("html").get_attribute("lang") == "en"
    assert card.locator(".part.cause h4").text_content() == "Root cause"  # cards re-rendered
    page.reload()  # the URL still carries the query: the search runs again, now in English
    page.locator(".card").first.wait_for()
    assert page.locator(".card .part.cause h4").first.text_content() == "Root cause"  # persisted in localStorage
    assert page.locator("#search-btn-text").inner_text() == "Search"
    page.goto("/articles/tokenizer-pad")
    assert page.locator(".answer h2").first.text_content() == "Root cause"  # and the server follows it

    # keyboard: Tab from the paste box reaches the buttons, with a visible focus ring
    page.goto("/")
    page.locator("#q").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.id")
    assert focused == "search-btn"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"
    assert not p.errors, p.errors


@pytest.mark.slow
@needs_chromium
def test_none_verdict_says_no_article_shows_related_and_how_to_add(open_page, server):
    body = api_verdict(server, NONE_QUERY)
    assert body["verdict"] == "none" and body["results"], body  # the fixture corpus has no npm article
    p = open_page()
    page = p.page
    page.goto("/?q=" + quote(NONE_QUERY))
    notice = page.locator("#verdict")
    notice.wait_for()
    assert notice.get_attribute("data-verdict") == "none"
    assert notice.locator("h3").inner_text() == "The knowledge base has no article for this error"
    assert notice.locator(".verdict-reason").inner_text() == "Why: " + reason_text(body["reason"])
    heading = page.locator("#related-heading")
    assert heading.inner_text() == "Related, not a match"
    cards = page.locator(".card")
    assert cards.count() == min(3, len(body["results"]))
    assert cards.first.get_attribute("data-article-id") == body["results"][0]["article_id"]
    badges = page.locator(".card .badge-word").all_inner_texts()
    assert badges[0] == "Related, not a match" and set(badges[1:]) <= {"Related"}
    # the related cards come after the heading, and no fix is shown open as if it were the answer
    assert page.evaluate("document.getElementById('related-heading').compareDocumentPosition("
                         "document.querySelector('.cards')) & Node.DOCUMENT_POSITION_FOLLOWING") != 0
    assert page.locator(".card .part.fix[open]").count() == 0 and page.locator(".card section.part.fix").count() == 0
    add = page.locator("#how-to-add")
    assert add.locator("h3").inner_text() == "How to add an article"
    assert "kb ingest FILE" in add.inner_text() and "POST /v1/articles" in add.inner_text()
    assert add.locator("a").count() == 0  # no link anywhere outside
    assert page.locator("#status").text_content().startswith("The knowledge base has no article for this error.")
    _shot(page, "web-search-none.png")

    # the same in Chinese, re-rendered in place by the language switch
    page.get_by_role("button", name="切换到中文").click()
    assert notice.locator("h3").inner_text() == "知识库里没有针对这个报错的文章"
    assert page.locator("#related-heading").inner_text() == "相关但不是同一问题"
    assert page.locator(".card .badge-word").first.inner_text() == "相关但不是同一问题"
    assert page.locator("#how-to-add h3").inner_text() == "如何补充文章"
    assert "kb ingest FILE" in page.locator("#how-to-add").inner_text()
    _shot(page, "web-search-none-zh.png")
    assert not p.errors, p.errors


@pytest.mark.slow
@needs_chromium
def test_every_verdict_is_shown_as_the_api_gave_it(open_page, server):
    """Whatever the core decides for these (answer, and not), the page says that verdict and its reason."""
    p = open_page()
    page = p.page
    queries = ["NCCL watchdog timeout", "Invalidate trace cache @ step 812: expected module 12, but got module 640",
               NONE_QUERY, "docker: Error response from daemon: pull access denied for foo",
               "how do I bake a chocolate cake for my grandmother"]
    seen = set()
    for query in queries:
        body = api_verdict(server, query)
        seen.add(body["verdict"])
        page.goto("/?q=" + quote(query))
        notice = page.locator("#verdict")
        notice.wait_for()
        (heading, top_badge), _ = VERDICT_WORDS[body["verdict"]]
        assert notice.get_attribute("data-verdict") == body["verdict"], query
        assert notice.locator("h3").inner_text() == heading, query
        assert reason_text(body["reason"]) in notice.locator(".verdict-reason").inner_text(), query
        badges = page.locator(".card .badge-word").all_inner_texts()
        assert badges[0] == top_badge and set(badges[1:]) <= {"Related"}, (query, badges)
        assert (page.locator("#how-to-add").count() == 1) == (body["verdict"] == "none"), query
    assert {"answer", "none"} <= seen, seen
    assert not p.errors, p.errors


@pytest.mark.slow
@needs_chromium
def test_thumbs_down_on_the_page_then_the_admin_links_the_gap(open_page, server, kb, corpus_copy):
    from conftest import ADMIN_TOKEN

    p = open_page()
    page = p.page
    page.goto("/")
    page.get_by_label("Paste an error message, a traceback or a log").fill(NCCL_PASTE)
    page.locator("#search-btn").click()
    page.locator("#feedback").wait_for()
    page.locator("#feedback button[data-helpful='false']").click()
    page.get_by_text("Thanks: recorded.").wait_for()
    (gap,) = [g for g in kb.gaps() if "nccl-p2p-hang" in g.closest]
    assert gap.unhelpful == 1 and gap.doors == ["web"]  # the page says which door it is

    page.goto("/admin/gaps")
    page.locator("#token").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Show gaps").click()
    item = page.locator(f"li[data-gap-id='{gap.gap_id}']")
    item.wait_for()
    assert "👎 1" in item.inner_text() and "nccl-p2p-hang" in item.locator("input").input_value()
    item.get_by_role("button", name="Link").click()
    item.get_by_text("Linked:").wait_for()
    assert "error_lines:" in (corpus_copy / "nccl-p2p-hang.md").read_text(encoding="utf-8")
    _shot(page, "web-admin-gaps.png")
    assert not p.dialogs and not p.errors, p.errors
