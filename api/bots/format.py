"""What every bot shares: a neutral `Answer`, its wording, and the one layout the platforms fill in.

`build_answer` turns a `SearchResponse` into an `Answer` (language, wording, trimming,
and making untrusted article text inert in ways that hold on every platform: links and
images shown as plain text, HTML tags stripped, @-mentions defused). `render_sections`
lays it out once; each platform's module holds its own renderer, which only supplies that
platform's syntax and escaping (a `Style`):

- slack.py       `to_slack`      -> {"text": mrkdwn, "blocks": [...]}  (`&`, `<`, `>` escaped as Slack asks)
- mattermost.py  `to_mattermost` -> Markdown string
- dingtalk.py    `to_dingtalk`   -> {"msgtype": "markdown", "markdown": {"title", "text"}}
- feishu.py      `to_feishu`     -> {"msg_type": "post", "content": "<json>"}  (rich text, plain-text elements)
- wecom.py       `to_wecom`      -> {"msgtype": "markdown", "markdown": {"content"}}  (<= 2048 bytes)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Literal
from urllib.parse import quote

from kb.text import has_chinese

# -- limits ----------------------------------------------------------------

CODE_MAX_LINES = 12
CODE_MAX_CHARS = 900
TEXT_MAX_CHARS = 600          # root cause / fix prose of the answer
MAYBE_TEXT_MAX_CHARS = 220    # the one-line root cause of a "maybe" or "none" candidate
MAYBE_COUNT = 2               # candidates listed when the verdict is not "answer"
REASON_MAX_CHARS = 300        # the core's one-line reason (it may quote an article's error line)

def reply_lang(text: str) -> Literal["zh", "en"]:
    """Answer in Chinese when the message has any Chinese at all: a Chinese question around an
    English error is a Chinese speaker asking (kb.text.has_chinese)."""
    return "zh" if has_chinese(text) else "en"


# -- wording -----------------------------------------------------------------

_WORDS = {
    "en": {
        "root_cause": "Root cause",
        "fix": "Fix",
        "excerpt": "From the article",
        "full_article": "Full article",
        "helpful": "Did it help?",
        "confidence": "Confidence",
        "answer_foot": "Confident answer",
        "possible": "Possible match",
        "related": "Related",
        "related_not_match": "Related, not a match",
        "headline_maybe": "Possible match — check it against your error",
        "tail_maybe": "If it does not fit, the knowledge base may not cover this error yet.",
        "headline_none": "No article in the knowledge base covers this error",
        "how_to_add": "To add one: write a Markdown article (see corpus/AUTHORING.md) and run `kb ingest FILE`, "
                      "or POST it to /v1/articles.",
        "headline_empty": "Paste an error message, a traceback or a question after the command, "
                          "e.g. `/kb CUDA out of memory during evaluation`.",
        "headline_error": "kb could not search right now",
        "trimmed": "Some of the text was trimmed; the full article has all of it",
        "code_trimmed": "… (trimmed, see the full article)",
        "searching": "Searching the knowledge base…",
    },
    "zh": {
        "root_cause": "根本原因",
        "fix": "解决办法",
        "excerpt": "文章摘录",
        "full_article": "查看全文",
        "helpful": "有帮助吗？",
        "confidence": "把握",
        "answer_foot": "有把握的答案",
        "possible": "可能匹配",
        "related": "相关",
        "related_not_match": "相关但不是同一问题",
        "headline_maybe": "可能是这篇，请先核对它和你的报错是否一致",
        "tail_maybe": "如果对不上，说明知识库可能还没有收录这个问题。",
        "headline_none": "知识库里没有针对这个报错的文章",
        "how_to_add": "如何补充：按 corpus/AUTHORING.md 写一篇 Markdown 文章，然后运行 `kb ingest 文件`，"
                      "或者 POST 到 /v1/articles。",
        "headline_empty": "请在命令后粘贴报错信息、traceback 或问题，例如 `/kb 评估时 CUDA out of memory`。",
        "headline_error": "kb 暂时无法搜索",
        "trimmed": "部分内容已截断，完整内容请看全文",
        "code_trimmed": "…（已截断，完整内容见全文）",
        "searching": "正在搜索知识库…",
    },
}


def words(lang: str) -> dict:
    return _WORDS["zh" if lang == "zh" else "en"]


def percent(confidence: float) -> str:
    """A result's confidence as a number a person reads (no threshold turns it into words)."""
    return f"{round(float(confidence) * 100)}%"


def searching_text(lang: str) -> str:
    return words(lang)["searching"]


# -- neutral structure -------------------------------------------------------


@dataclass(frozen=True)
class Block:
    kind: Literal["text", "code"]
    text: str
    lang: str = ""


@dataclass
class Item:
    article_id: str
    title: str
    url: str
    confidence: float
    label: str                  # what the verdict makes of it: possible match / related / related, not a match
    root_cause: list[Block] = field(default_factory=list)
    fix: list[Block] = field(default_factory=list)
    excerpt: list[Block] = field(default_factory=list)


@dataclass
class Answer:
    """kind: the core's verdict ("answer", "maybe", "none"), or "empty" / "error" when no search ran."""

    lang: Literal["zh", "en"]
    kind: Literal["answer", "maybe", "none", "empty", "error"]
    headline: str = ""
    items: list[Item] = field(default_factory=list)
    tail: str = ""
    trimmed: bool = False
    reason: str = ""
    confident: bool = False     # the core's `confident` (true exactly for the "answer" verdict)
    search_id: str = ""         # what a 👍/👎 button refers to (empty: the search was not recorded)
    vote_urls: tuple[str, str] | None = None   # signed 👍/👎 links, for platforms without button callbacks

    @property
    def title(self) -> str:
        """A short title (DingTalk/Feishu want one): the article's, or the headline's start."""
        if self.kind == "answer" and self.items:
            return self.items[0].title
        return _cut(self.headline, 60)[0]

    @property
    def w(self) -> dict:
        return words(self.lang)


def article_url(public_url: str, article_id: str) -> str:
    """`{public_url}/articles/{id}`, relative (`/articles/{id}`) when no public URL is set."""
    return f"{(public_url or '').rstrip('/')}/articles/{quote(article_id, safe='')}"


def is_absolute(url: str) -> bool:
    return url.startswith(("https://", "http://"))


# -- making article text inert (platform independent part) -------------------

_FENCE = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_HTML_TAGS = ("a|abbr|b|big|blockquote|br|center|code|del|details|div|em|font|h[1-6]|hr|i|img|ins|kbd|li|mark|"
              "ol|p|pre|q|s|small|span|strike|strong|sub|summary|sup|table|tbody|td|th|thead|tr|tt|u|ul|at|"
              "iframe|script|style|video|audio|source|picture|svg|input|button|form|meta|link")
_HTML_TAG = re.compile(rf"</?(?:{_HTML_TAGS})\b[^<>]*/?>", re.I)
_MENTION = re.compile(r"@(?=\w)")  # \w covers Chinese names too
ZWSP = "\u200b"


def defuse_mentions(text: str) -> str:
    """`@channel`, `@all`, `@所有人`, `@alice` -> a zero-width space after `@`: no platform pings."""
    return _MENTION.sub("@" + ZWSP, text)


def inert_prose(text: str) -> str:
    """Article prose made safe to show anywhere: no HTML, no hidden link targets, no mentions."""
    text = _COMMENT.sub("", text)
    text = _IMAGE.sub(lambda m: f"[{m.group(1) or 'image'}: {m.group(2)}]" if m.group(2) else m.group(1), text)
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})" if m.group(2) and m.group(2) != m.group(1) else m.group(1), text)
    text = _HTML_TAG.sub("", text)
    return defuse_mentions(text).strip()


def split_blocks(markdown: str) -> list[Block]:
    """Markdown -> prose and fenced-code blocks (an unclosed fence runs to the end)."""
    blocks: list[Block] = []
    prose: list[str] = []
    lines = (markdown or "").replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        if "\n".join(prose).strip():
            blocks.append(Block("text", "\n".join(prose).strip()))
        prose = []
        fence = m.group("fence")
        code: list[str] = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and not lines[i].strip().strip(fence[0])):
            code.append(lines[i])
            i += 1
        i += 1  # the closing fence
        lang = re.sub(r"[^\w+.-]", "", (m.group("info") or "").split(" ")[0])[:20]
        blocks.append(Block("code", "\n".join(code).rstrip("\n"), lang))
    if "\n".join(prose).strip():
        blocks.append(Block("text", "\n".join(prose).strip()))
    return blocks


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """At most `limit` characters, cut at a word or sentence boundary, with an ellipsis."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    for sep in ("\n", "。", ". ", "；", "; ", "，", ", ", " "):
        pos = head.rfind(sep)
        if pos >= limit * 0.6:
            head = head[: pos + len(sep)]
            break
    return head.rstrip() + "…", True


def _prepare(markdown: str, text_limit: int, code_note: str, *, prose_only: bool = False) -> tuple[list[Block], bool]:
    """Split, make inert and trim one field; returns (blocks, trimmed?)."""
    out: list[Block] = []
    trimmed = False
    budget = text_limit
    for block in split_blocks(markdown):
        if block.kind == "text":
            if budget <= 0:
                trimmed = True
                break
            text, cut = _cut(inert_prose(block.text), budget)
            budget -= len(text)
            trimmed |= cut
            if text:
                out.append(Block("text", text))
            if cut:
                break
        else:
            if prose_only:
                trimmed = True
                continue
            lines = block.text.split("\n")
            code = "\n".join(lines[:CODE_MAX_LINES])
            cut = len(lines) > CODE_MAX_LINES
            if len(code) > CODE_MAX_CHARS:
                code = code[:CODE_MAX_CHARS].rsplit("\n", 1)[0] if "\n" in code[:CODE_MAX_CHARS] else code[:CODE_MAX_CHARS]
                cut = True
            if cut:
                code = code + "\n" + code_note
            trimmed |= cut
            out.append(Block("code", code, block.lang))
    return out, trimmed


def _item(result, lang: str, public_url: str, *, maybe: bool, label: str = "") -> tuple[Item, bool]:
    w = words(lang)
    item = Item(
        article_id=result.article_id,
        title=defuse_mentions(_HTML_TAG.sub("", result.title or result.article_id)).strip() or result.article_id,
        url=article_url(public_url, result.article_id),
        confidence=float(result.confidence),
        label=label,
    )
    if maybe:
        source = result.root_cause or result.snippet or ""
        blocks, _ = _prepare(source, MAYBE_TEXT_MAX_CHARS, w["code_trimmed"], prose_only=True)
        if result.root_cause:
            item.root_cause = blocks
        else:
            item.excerpt = blocks
        return item, False  # a "maybe" is a pointer; its shortness is expected, no trim note
    item.root_cause, t1 = _prepare(result.root_cause or "", TEXT_MAX_CHARS, w["code_trimmed"])
    item.fix, t2 = _prepare(result.fix or "", TEXT_MAX_CHARS, w["code_trimmed"])
    trimmed = t1 or t2
    if not item.root_cause and not item.fix:
        item.excerpt, trimmed = _prepare(result.snippet or "", TEXT_MAX_CHARS, w["code_trimmed"])
    return item, trimmed


def verdict_of(response) -> tuple[str, str]:
    """(verdict, reason) exactly as the core decided them; the reason made inert (it may quote an article)."""
    verdict = getattr(response, "verdict", None)
    if verdict not in ("answer", "maybe", "none"):  # a response from before verdicts: only `confident`
        verdict = "answer" if response.confident else "maybe"
    reason = _cut(" ".join(inert_prose(getattr(response, "reason", "") or "").split()), REASON_MAX_CHARS)[0]
    return verdict, reason


def _with_reason(headline: str, reason: str, lang: str, *, parenthesised: bool) -> str:
    """"Headline (reason)." or "Headline: reason", with the punctuation of the message's language."""
    zh = lang == "zh"
    if parenthesised:
        if not reason:
            return headline + ("。" if zh else ".")
        return f"{headline}（{reason}）。" if zh else f"{headline} ({reason})."
    if not reason:
        return headline
    return f"{headline}：{reason}" if zh else f"{headline}: {reason}"


def build_answer(response, query: str, public_url: str = "") -> Answer:
    """The neutral answer for a `SearchResponse` (None: the query was empty).

    The wording follows the core's `verdict` and `reason`; no threshold on a confidence is kept here."""
    lang = reply_lang(query)
    w = words(lang)
    if response is None:
        return Answer(lang, "empty", headline=w["headline_empty"])
    verdict, reason = verdict_of(response)
    confident = bool(response.confident)
    sid = getattr(response, "search_id", "") or ""
    results = list(response.results or [])
    if verdict == "none" or not results:
        items = [_item(r, lang, public_url, maybe=True, label=w["related_not_match"])[0] for r in results[:MAYBE_COUNT]]
        return Answer(lang, "none", headline=_with_reason(w["headline_none"], reason, lang, parenthesised=True),
                      items=items, tail=w["how_to_add"], reason=reason, confident=confident, search_id=sid)
    if verdict == "answer":
        item, trimmed = _item(results[0], lang, public_url, maybe=False, label=w["answer_foot"])
        return Answer(lang, "answer", items=[item], trimmed=trimmed, reason=reason, confident=confident, search_id=sid)
    items = [_item(r, lang, public_url, maybe=True, label=w["possible"] if i == 0 else w["related"])[0]
             for i, r in enumerate(results[:MAYBE_COUNT])]
    return Answer(lang, "maybe", headline=_with_reason(w["headline_maybe"], reason, lang, parenthesised=False),
                  items=items, tail=w["tail_maybe"], reason=reason, confident=confident, search_id=sid)


def empty_answer(query: str = "") -> Answer:
    return build_answer(None, query)


def error_answer(query: str, detail: str) -> Answer:
    lang = reply_lang(query)
    detail = defuse_mentions(_HTML_TAG.sub("", str(detail)))[:300]
    return Answer(lang, "error", headline=f"{words(lang)['headline_error']}: {detail}")


# -- rendering: one layout, per-platform syntax --------------------------------


def answer_foot(answer: Answer) -> str:
    """The line under an answer: the verdict, the top result's confidence as a number, the reason."""
    item, c = answer.items[0], "：" if answer.lang == "zh" else ": "
    pct = f"（{percent(item.confidence)}）" if answer.lang == "zh" else f" ({percent(item.confidence)})"
    return f"{item.label}{pct}{c}{answer.reason}" if answer.reason else f"{item.label}{pct}"


@dataclass(frozen=True)
class Style:
    escape: Callable[[str], str]               # prose and titles
    escape_code: Callable[[str], str]          # inside code blocks
    bold: Callable[[str], str]
    link: Callable[[str, str], str]            # (label, absolute url)
    code: Callable[[str, str], str]            # (escaped code, lang)
    colon: Callable[[str], str] = lambda lang: "：" if lang == "zh" else ": "


def plain_link(style: Style, label: str, url: str) -> str:
    return style.link(label, url) if is_absolute(url) else f"{style.escape(label)}: {style.escape(url)}"


def _blocks(style: Style, blocks: list[Block]) -> list[str]:
    out = []
    for b in blocks:
        if b.kind == "code":
            out.append(style.code(style.escape_code(b.text), b.lang))
        else:
            out.append(style.escape(b.text))
    return out


def render_sections(answer: Answer, style: Style) -> list[list[str]]:
    """The answer as sections of lines, in `style`'s syntax. Every platform uses this layout."""
    w, c = answer.w, style.colon(answer.lang)
    sections: list[list[str]] = []
    if answer.kind in ("empty", "error"):
        return [[style.escape(answer.headline)]]
    if answer.kind == "answer":
        item = answer.items[0]
        lines = [style.bold(style.escape(item.title))]
        for label, blocks in ((w["root_cause"], item.root_cause), (w["fix"], item.fix), (w["excerpt"], item.excerpt)):
            if not blocks:
                continue
            parts = _blocks(style, blocks)
            if blocks[0].kind == "text":
                lines.append(f"{style.bold(label + c.strip())} {parts[0]}" if answer.lang == "en"
                             else f"{style.bold(label + c)}{parts[0]}")
                lines.extend(parts[1:])
            else:
                lines.append(style.bold(label + c.strip()))
                lines.extend(parts)
        sections.append(lines)
        foot = [answer_foot(answer)]
        if answer.trimmed:
            foot.append(plain_link(style, w["trimmed"], item.url))
        else:
            foot.append(plain_link(style, w["full_article"], item.url))
        sections.append([style.escape(foot[0]), foot[1]])
        if answer.vote_urls:
            sections.append([style.escape(w["helpful"]) + " " + plain_link(style, "👍", answer.vote_urls[0])
                             + " · " + plain_link(style, "👎", answer.vote_urls[1])])
        return sections
    # maybe / none: the verdict and its reason, then the closest articles as pointers
    sections.append([style.escape(answer.headline)])
    for n, item in enumerate(answer.items, 1):
        head = (f"{n}. {style.escape(item.label)}{style.escape(c)}{style.bold(style.escape(item.title))} "
                f"({style.escape(w['confidence'] + c + percent(item.confidence))})")
        lines = [head]
        blocks = item.root_cause or item.excerpt
        label = w["root_cause"] if item.root_cause else w["excerpt"]
        if blocks:
            lines.append(style.escape(f"{label}{c}") + " ".join(_blocks(style, blocks)).replace("\n", " "))
        lines.append(plain_link(style, w["full_article"], item.url))
        sections.append(lines)
    sections.append([style.escape(answer.tail)])
    return sections


# DingTalk and WeCom Markdown renderers accept some HTML (`<font>`, WeCom's `<@userid>`):
# break every tag opener with a zero-width space so nothing is a tag, keep `a > b`, `2>&1`.

_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?@])")


def defang_tags(text: str) -> str:
    return _TAG_OPEN.sub("<" + ZWSP, text)


# Markdown (Mattermost, DingTalk, WeCom): code fences and links.

def md_code(code: str, lang: str) -> str:
    fence = "````" if "```" in code else "```"
    return f"{fence}{lang}\n{code}\n{fence}"


def md_link(label: str, url: str) -> str:
    label = re.sub(r"[\[\]()]", "", label)
    return f"[{label}]({url})"
