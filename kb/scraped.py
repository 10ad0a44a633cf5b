"""Turn a scraped blog page (plain text) into clean Markdown.

Scraped pages carry site junk: "登录后查看全文", recommendation lists, project cards
(a description glued to a language tag and star counts), lists of other articles.
None of it may reach the index, even when no marker line announces it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .text import HAN, HAN_CHAR

# A line that starts the site's furniture: everything from here on is junk.
_END_MARKER = re.compile(
    r"^(?:登录后查看全文|登录后发表评论|热门项目推荐|相关项目推荐|项目优选|最新内容推荐|相关推荐|猜你喜欢|推荐阅读|"
    r"相关文章|热门文章|精选推荐|阅读全文|展开全文|更多推荐|全文完|评论区|"
    r"Related (?:posts|articles)|Trending repositories|Latest posts|Recommended(?: for you)?|You may also like|"
    r"Read more|Sign in to read.*|Comments(?: \(\d+\))?|Leave a comment|More from .*)$",
    re.I,
)
# Single junk lines that may stand anywhere.
_JUNK_LINES = {"收起", "展开", "暂无简介", "点赞", "收藏", "分享", "评论", "举报", "关注", "目录"}
_JUNK_LINE = re.compile(
    r"^(?:Home\s*/|Sign in\b|Share this|Copyright\b|©|All rights reserved|Was this (?:article|page) helpful|"
    r"\d+ (?:people|person) found this helpful|本文对你有帮助吗|\d+ 人觉得有用)",
    re.I,
)
_LANGS = (
    r"Python|C\+\+|C#|C|Java|JavaScript|TypeScript|TSX|JSX|Go|Rust|Kotlin|Swift|Dart|Vue|"
    r"Dockerfile|Shell|HTML|CSS|Less|SCSS|Jinja|Cangjie|Ruby|PHP|Lua|Scala|Jupyter Notebook|"
    r"Objective-C|Markdown|Makefile|CMake|Assembly|Verilog|VHDL|Julia|Perl"
)
_LANG_LINE = re.compile(rf"^(?:{_LANGS})$")
_COUNT_LINE = re.compile(r"^\d+(?:\.\d+)?\s?[KkMm万w]?$")
# A project card glued into one line: "...description.Python00", "...方案。00", "- QQwen3...Python00".
_CARD_TAIL = re.compile(
    rf"(?:(?<![A-Za-z0-9_\-/])(?:{_LANGS})\d{{1,5}}|[。.!！)）]\d{{2,5}}|[{HAN}]0\d{{1,3}}|[。！)）](?:{_LANGS}))$"
)
_BYLINE = re.compile(r"^(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?\s*作者[:：]|(?:Posted|Published) on \d{4}-\d{2}-\d{2})")
_SENTENCE_END = re.compile(r"[。！？!?；;，,：:.…]$")
# Log and code lines are never headings, however short they are.
_CODE_LIKE = re.compile(
    r"[│╰╭─×\[\]{}()<>=\"'`/\\|$#@]|\b[A-Za-z]+[_.][A-Za-z0-9_]+|\b(?:error|Error|ERROR|fatal|Failed|failed|note|"
    r"warning|WARNING|Traceback|import|from|File|line \d|exit code|Killed|Aborted|Segmentation fault)\b"
)
_COMMAND = re.compile(
    r"^(?:\$ )?(?:pip3?|conda|export|rm|python3?|git|apt(?:-get)?|nvidia-smi|torchrun|deepspeed|"
    r"accelerate|ds_report|mkdir|sudo|docker|ln|ulimit|unset|source|cd|CUDA_VISIBLE_DEVICES=\S+)\s"
)


@dataclass(frozen=True)
class CleanPage:
    title: str
    markdown: str
    byline: str | None


def _is_other_articles_list(line: str) -> bool:
    """"最新内容推荐" style: many CJK titles side by side on one long line, no full stops."""
    parts = line.split()
    return len(line) > 120 and len(parts) >= 4 and "。" not in line and sum(
        1 for p in parts if HAN_CHAR.search(p)
    ) >= 4


def is_junk_line(line: str) -> bool:
    s = line.strip()
    if not s:
        return False
    return (
        s in _JUNK_LINES
        or bool(_JUNK_LINE.match(s))
        or bool(_LANG_LINE.match(s))
        or bool(_COUNT_LINE.match(s))
        or bool(_CARD_TAIL.search(s))
        or _is_other_articles_list(s)
    )


def _looks_like_heading(line: str, next_line: str | None) -> bool:
    """Short standalone line, no sentence punctuation, followed by body text."""
    s = line.strip()
    if not s or _SENTENCE_END.search(s) or s.startswith(("-", "*", "#", "`")) or _COMMAND.match(s):
        return False
    if _CODE_LIKE.search(s):
        return False
    limit = 24 if HAN_CHAR.search(s) else 60
    if len(s) > limit or next_line is None:
        return False
    return len(next_line.strip()) > len(s) or next_line.strip().startswith("-")


def _article_start(lines: list[str]) -> int:
    """Where the article begins: the title line above a byline, else past any leading site furniture."""
    for i, ln in enumerate(lines[:80]):
        if _BYLINE.match(ln):
            j = i - 1
            while j >= 0 and not lines[j]:
                j -= 1
            return max(j, 0)
    i = 0
    while i < len(lines) and (not lines[i] or _END_MARKER.match(lines[i]) or is_junk_line(lines[i])):
        i += 1
    return i


def clean_scraped_page(text: str) -> CleanPage:
    """Title from the first real line; headings from short standalone lines; junk removed."""
    lines = [ln.strip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    start = _article_start(lines)
    body: list[str] = []
    for ln in lines[start:]:
        if _END_MARKER.match(ln):
            break
        if not is_junk_line(ln):
            body.append(ln)
    while body and not body[0]:
        body.pop(0)
    title = body.pop(0) if body else ""
    byline = None
    if body and _BYLINE.match(body[0]):
        byline = body.pop(0)
    out: list[str] = [f"# {title}", ""] if title else []
    in_code = False
    nonblank = [ln for ln in body if ln]
    for i, ln in enumerate(nonblank):
        nxt = nonblank[i + 1] if i + 1 < len(nonblank) else None
        if _COMMAND.match(ln):
            if not in_code:
                out.append("```bash")
                in_code = True
            out.append(ln)
            continue
        if in_code:
            out.extend(["```", ""])
            in_code = False
        if _looks_like_heading(ln, nxt):
            out.extend([f"## {ln}", ""])
        else:
            out.extend([ln, ""])
    if in_code:
        out.append("```")
    return CleanPage(title=title, markdown="\n".join(out).strip() + "\n", byline=byline)
