"""The web page: paste an error, read the answer (served from api/static).

- `/`                 the search page (static `index.html`; `app.js` calls `POST /v1/search`).
- `/articles/{id}`    one article, rendered on the server from its Markdown with raw HTML
                      escaped and links restricted to http(s)/mailto/relative; every other
                      interpolated value is HTML-escaped. Unknown ids get an HTML 404 page.
- `POST /web/search`  the page's search: the API's answer with root cause and fix as safe HTML.
- `/vote`             a signed 👍/👎 link from a chat answer: GET shows a button, POST records the vote.
- `/admin/gaps`       the knowledge loop's admin page (`admin.js` calls `/v1/gaps` with the admin token).
- `/static/{name}`    the page's own CSS/JS/icon (a fixed list: nothing else is served).

Every HTML page carries a strict Content-Security-Policy (no inline script, no
third-party origin), so even a rendering mistake cannot run an article's script.
No CDN and no build step: the files in api/static are what the browser gets.
"""

from __future__ import annotations

import html
import json
import re
from functools import lru_cache
from pathlib import Path
from string import Template
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from markdown_it import MarkdownIt

from kb.errors import KbError, NotFoundError

from ..deps import KbDep, SearchesDep, SettingsDep
from ..runner import run_blocking
from ..schemas import SearchRequest

router = APIRouter(include_in_schema=False)

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

CSP = (
    "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
HTML_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
# The only files /static/ serves, with their types (no directory listing, no traversal).
STATIC_FILES = {
    "strings.json": "application/json; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "admin.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
LANG_COOKIE = "kb_lang"


# -- Markdown -----------------------------------------------------------------

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
_SAFE_SCHEMES = {"http", "https", "mailto"}


def safe_link(url: str) -> bool:
    """Links and image sources an article may carry: http(s), mailto, or relative/#anchor.

    Called by markdown-it on the normalized URL (entities decoded, odd bytes
    percent-encoded), so `javascript:`, `JaVaScRiPt:`, `data:` and friends are refused.
    """
    url = url.strip()
    m = _SCHEME.match(url)
    if m:
        return m.group(1).lower() in _SAFE_SCHEMES
    # no scheme: relative path, query or #anchor; refuse anything that still holds a colon
    # before the first slash (a scheme markdown-it's normalizer might have let through)
    head = url.split("/", 1)[0]
    return ":" not in head


def _link_open(self, tokens, idx, options, env):
    token = tokens[idx]
    href = token.attrGet("href") or ""
    if urlsplit(href).scheme in ("http", "https"):
        token.attrSet("rel", "nofollow noopener noreferrer")
    return self.renderToken(tokens, idx, options, env)


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.validateLink = safe_link  # stricter than the default (which already refuses javascript:)
    md.add_render_rule("link_open", _link_open)
    return md


def render_markdown(text: str, *, shift_headings: int = 0, drop_title: str | None = None) -> str:
    """Article Markdown to HTML: raw HTML escaped (html=False), unsafe links dropped.

    `shift_headings` demotes headings (the page's own <h1> is the title);
    `drop_title` removes a leading heading that repeats the title.
    """
    md = _markdown()
    tokens = md.parse(text or "")
    if drop_title and len(tokens) >= 3 and tokens[0].type == "heading_open" and tokens[0].tag == "h1":
        heading = (tokens[1].content or "").strip().casefold()
        if heading and drop_title.strip().casefold().startswith(heading):
            tokens = tokens[3:]
    if shift_headings:
        for tok in tokens:
            if tok.type in ("heading_open", "heading_close"):
                tok.tag = f"h{min(6, int(tok.tag[1]) + shift_headings)}"
    return md.renderer.render(tokens, md.options, {})


# -- page text: one table for the server's pages and app.js (api/static/strings.json) --

STRINGS = json.loads((STATIC_DIR / "strings.json").read_text(encoding="utf-8"))
"""{"en": {...}, "zh": {...}}: every label of the web pages, in both languages."""
_STRINGS_META = f'<meta name="kb-strings" content="{html.escape(json.dumps(STRINGS, ensure_ascii=False), quote=True)}">\n'


def with_strings(page: str) -> str:
    """The page with the string table inlined as an attribute value: data, never script."""
    return page.replace("</head>", _STRINGS_META + "</head>", 1)


def page_lang(request: Request) -> str:
    """The UI language: the switch's cookie (set by app.js), else Accept-Language."""
    cookie = request.cookies.get(LANG_COOKIE, "")
    if cookie in STRINGS:
        return cookie
    for part in request.headers.get("accept-language", "").split(","):
        tag = part.split(";")[0].strip().lower()
        if tag.startswith("zh"):
            return "zh"
        if tag.startswith("en"):
            return "en"
    return "en"


@lru_cache(maxsize=4)
def _template(name: str) -> Template:
    return Template((STATIC_DIR / name).read_text(encoding="utf-8"))


def _e(value) -> str:
    return html.escape(str(value if value is not None else ""), quote=True)


def _t(lang: str, key: str) -> str:
    """A UI string as an element: escaped text plus the key app.js translates on the switch."""
    return f'<span data-i18n="{_e(key)}">{_e(STRINGS[lang][key])}</span>'


def _html(body: str, status: int = 200, extra: dict | None = None) -> HTMLResponse:
    return HTMLResponse(with_strings(body), status_code=status, headers={**HTML_HEADERS, **(extra or {})})


def _page(lang: str, title: str, main: str, status: int = 200) -> HTMLResponse:
    s = STRINGS[lang]
    page = _template("article.html").substitute(
        lang=_e("zh-CN" if lang == "zh" else "en"),
        title=_e(title),
        skip=_e(s["skip"]),
        tagline=_e(s["tagline"]),
        switch=_e(s["switch"]),
        switch_label=_e(s["switchLabel"]),
        footer=_e(s["footer"]),
        api_docs=_e(s["apiDocs"]),
        main=main,
    )
    # the UI language follows the cookie / Accept-Language; a 503 page says when to retry
    extra = {"Vary": "Accept-Language, Cookie"}
    if status == 503:
        extra["Retry-After"] = "2"
    return _html(page, status, extra)


def _source_html(source: str | None) -> str:
    if not source:
        return ""
    if urlsplit(source).scheme in ("http", "https"):
        return f'<a href="{_e(source)}" rel="nofollow noopener noreferrer">{_e(source)}</a>'
    return _e(source)


def _section(lang: str, key: str, markdown_text: str, cls: str, content_lang: str) -> str:
    if (markdown_text or "").strip():
        body = f'<div class="md"{content_lang}>{render_markdown(markdown_text, shift_headings=2)}</div>'
    else:
        body = f'<p class="muted">{_t(lang, "none")}</p>'
    return f'<section class="answer-part {cls}"><h2>{_t(lang, key)}</h2>{body}</section>'


def article_main(lang: str, article: dict) -> str:
    title = article.get("title") or article.get("article_id") or ""
    art_lang = (article.get("lang") or "").lower()
    lang_name = {"en": _t(lang, "langEn"), "zh": _t(lang, "langZh")}.get(art_lang, _e(art_lang))
    meta = [f'<div><dt>{_t(lang, "articleId")}</dt><dd><code>{_e(article.get("article_id"))}</code></dd></div>',
            f'<div><dt>{_t(lang, "language")}</dt><dd>{lang_name}</dd></div>']
    tags = article.get("tags") or []
    if tags:
        chips = "".join(f'<li class="tag">{_e(t)}</li>' for t in tags)
        meta.append(f'<div><dt>{_t(lang, "tags")}</dt><dd><ul class="tags">{chips}</ul></dd></div>')
    versions = (article.get("meta") or {}).get("versions")
    if isinstance(versions, (str, int, float)) and str(versions).strip():
        meta.append(f'<div><dt>{_t(lang, "versions")}</dt><dd>{_e(versions)}</dd></div>')
    if article.get("source"):
        meta.append(f'<div><dt>{_t(lang, "source")}</dt><dd class="source">{_source_html(article["source"])}</dd></div>')

    content_lang = {"zh": ' lang="zh-CN"', "en": ' lang="en"'}.get(art_lang, "")
    summary = (_section(lang, "rootCause", article.get("root_cause") or "", "cause", content_lang)
               + _section(lang, "fix", article.get("fix") or "", "fix", content_lang))
    body = render_markdown(article.get("body") or "", shift_headings=1, drop_title=title)
    return (
        f'<p class="crumbs"><a href="/">&larr; {_t(lang, "back")}</a></p>'
        f'<article class="article" aria-labelledby="article-title">'
        f'<h1 id="article-title"{content_lang}>{_e(title)}</h1>'
        f'<dl class="article-meta">{"".join(meta)}</dl>'
        f'<div class="answer">{summary}</div>'
        f'<section class="full"><h2>{_t(lang, "fullArticle")}</h2><div class="md"{content_lang}>{body}</div></section>'
        f'</article>'
    )


def _message_main(lang: str, title_key: str, detail: str) -> str:
    return (
        f'<p class="crumbs"><a href="/">&larr; {_t(lang, "back")}</a></p>'
        f'<div class="notice notice-error"><h1>{_t(lang, title_key)}</h1>'
        f'<p>{_e(detail)}</p></div>'
    )


# -- routes ---------------------------------------------------------------------

@router.api_route("/", methods=["GET", "HEAD"])
async def index() -> Response:
    return _html((STATIC_DIR / "index.html").read_text(encoding="utf-8"))


@router.post("/web/search")
async def web_search(body: SearchRequest, request: Request, searches: SearchesDep) -> dict:
    """The page's search: `POST /v1/search`'s answer, plus each result's root cause and fix
    rendered to safe HTML here (markdown-it, raw HTML escaped, links checked), so the page
    carries no Markdown renderer of its own."""
    client = request.client.host if request.client else None
    data = (await searches.search(body.query, body.top_k, door="web", client=client)).as_dict()
    for r in data["results"]:
        r["root_cause_html"] = render_markdown(r["root_cause"], shift_headings=3)
        r["fix_html"] = render_markdown(r["fix"], shift_headings=3)
        r["snippet_html"] = render_markdown(r["snippet"])
    return data


def _vote_fields(form: dict) -> tuple[str, str, bool, str]:
    return (str(form.get("s", ""))[:64], str(form.get("a", ""))[:128], str(form.get("h", "")) == "1",
            str(form.get("t", ""))[:64])


@router.get("/vote")
async def vote_page(request: Request, s: str = "", a: str = "", h: str = "", t: str = "") -> Response:
    """A vote link from a chat answer (DingTalk, WeCom, Mattermost): a page with one button, so a
    chat app's link preview, which only GETs, records nothing."""
    lang = page_lang(request)
    helpful = h == "1"
    hidden = "".join(f'<input type="hidden" name="{k}" value="{_e(v)}">' for k, v in (("s", s), ("a", a), ("h", h), ("t", t)))
    main = (f'<p class="crumbs"><a href="/">&larr; {_t(lang, "back")}</a></p>'
            f'<h1>{_t(lang, "feedbackAsk")}</h1><p><code>{_e(a)}</code></p>'
            f'<form method="post" action="/vote">{hidden}<button type="submit" class="primary">'
            f'{_t(lang, "feedbackYes" if helpful else "feedbackNo")}</button></form>')
    return _page(lang, STRINGS[lang]["feedbackAsk"], main)


@router.post("/vote")
async def vote(request: Request, kb: KbDep, settings: SettingsDep) -> Response:
    """Record the vote of a signed link; a link kb did not sign is refused."""
    lang = page_lang(request)
    client = request.client.host if request.client else "unknown"
    if not request.app.state.feedback_limit.allow(client):
        return _page(lang, STRINGS[lang]["feedbackAsk"], _message_main(lang, "feedbackAsk", "too many votes: try again in a minute"), 429)
    form = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace")).items()}
    try:
        await run_blocking(settings, kb.vote, *_vote_fields(form), client)
    except KbError as exc:
        return _page(lang, STRINGS[lang]["feedbackAsk"], _message_main(lang, "feedbackAsk", str(exc)), 403)
    main = (f'<p class="crumbs"><a href="/">&larr; {_t(lang, "back")}</a></p>'
            f'<div class="notice notice-ok"><p>{_t(lang, "feedbackThanks")}</p></div>')
    return _page(lang, STRINGS[lang]["feedbackAsk"], main)


@router.api_route("/admin/gaps", methods=["GET", "HEAD"])
async def gaps_page() -> Response:
    """The admin page of the knowledge loop: the gaps, and linking them (the data needs the admin token)."""
    return _html((STATIC_DIR / "admin.html").read_text(encoding="utf-8"))


@router.api_route("/articles/{article_id:path}", methods=["GET", "HEAD"])
async def article_page(article_id: str, request: Request, kb: KbDep, settings: SettingsDep) -> Response:
    lang = page_lang(request)
    try:
        article = await run_blocking(settings, kb.get_article, article_id)
    except NotFoundError:
        detail = STRINGS[lang]["notFoundBody"] + f" ({article_id[:200]})"
        return _page(lang, STRINGS[lang]["notFoundTitle"], _message_main(lang, "notFoundTitle", detail), 404)
    except (KbError, HTTPException) as exc:
        detail = str(exc.detail if isinstance(exc, HTTPException) else exc)
        return _page(lang, STRINGS[lang]["unavailableTitle"], _message_main(lang, "unavailableTitle", detail), 503)
    return _page(lang, article.get("title") or article_id, article_main(lang, article))


@router.api_route("/static/{name}", methods=["GET", "HEAD"])
async def static_file(name: str) -> Response:
    media_type = STATIC_FILES.get(name)
    if media_type is None:
        raise HTTPException(404, f"no static file {name[:100]!r}")
    return FileResponse(STATIC_DIR / name, media_type=media_type,
                        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"})


@router.get("/favicon.ico")
async def favicon() -> Response:
    return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")
