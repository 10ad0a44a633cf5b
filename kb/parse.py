"""Parse an article's Markdown into sections and say what each section is for.

Sections follow headings; each is classified as symptom / error / cause / fix / other
from Chinese and English heading wording, with a content-based fallback when
headings are missing or unusual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

SYMPTOM, ERROR, CAUSE, FIX, OTHER = "symptom", "error", "cause", "fix", "other"
SUMMARY = "summary"
"""The article told again in its other language (`## In English` under Chinese prose, `## 中文摘要` under
English): what a question in that language finds it by. Never part of the root cause or fix fields."""

# Order matters: the first kind whose pattern matches the heading wins.
_HEADING_KINDS: list[tuple[str, re.Pattern]] = [
    (SUMMARY, re.compile(r"^\s*(?:in english|english summary|中文摘要|中文概要)\s*$", re.I)),
    (FIX, re.compile(
        r"解决|修复|处理步骤|处理方法|最佳实践|规避|绕过|临时方案|怎么办|如何修|如何解决|排查步骤|修改方法|应对|"
        r"第[一二三四五六七八九十\d]+步|步骤|检查清单|\bstep \d|\bchecklist\b|"
        r"\bfix(es|ed|ing)?\b|\bsolution|\bsolv|\bworkaround|\bresolution|\bremed|\bhow to (fix|solve|resolve)|"
        r"\bsteps\b|\bwhat (finally )?worked|\bmitigat|\bthe cure\b",
        re.I)),
    (CAUSE, re.compile(
        r"原因|根因|为什么|为何|根源|分析|机制|背后|情况[一二三四五六七八九十\d]|可能[一二三四五六七八九十\d]|"
        r"\bwhy\b|\broot[ -]?cause|\bcause|\bexplanation|\bwhat'?s going on|\bwhat is going on|"
        r"\bunder the hood|\banalysis\b|\bdiagnos",
        re.I)),
    (ERROR, re.compile(
        r"报错|错误信息|错误日志|错误输出|日志|堆栈|异常信息|错误提示|"
        r"\berror( message| output|s)?\b|\btraceback|\blogs?\b|\bstack ?trace|\bexception\b|\boutput\b",
        re.I)),
    (SYMPTOM, re.compile(
        r"现象|症状|问题描述|问题背景|背景|表现|场景|复现|"
        r"\bsymptoms?\b|\bproblem\b|\bwhat you see\b|\bdescription\b|\bissue\b|\bcontext\b|\breproduc|\bbackground",
        re.I)),
]

_CAUSE_CUES = re.compile(
    r"(根本原因|原因是|原因在于|之所以|是因为|问题出在|根源在于|"
    r"\bthe (root )?cause\b|\bcaused by\b|\bthis happens because\b|\bbecause\b|\bthe reason\b|\bhappens when\b)",
    re.I,
)
_FIX_CUES = re.compile(
    r"(解决办法|解决方法|解决方案|解决:|解决：|修复方法|可以通过|只需|改为|设置为|升级到|"
    r"\bto fix\b|\bthe fix\b|\bfix it\b|\bworkaround\b|\binstead\b|\bupgrade\b|\bset\s+\S+\s*(=|to)\b|\bsolution\b)",
    re.I,
)
_ERROR_CUES = re.compile(
    r"(Traceback \(most recent call last\)|\b[A-Z][A-Za-z]+(Error|Exception)\b:|\bERROR\b|\bWARN(ING)?\b|"
    r"\berror:|\bfatal\b|CUDA out of memory)"
)


@dataclass
class Section:
    """A heading and the blocks under it (up to the next heading of any level)."""

    heading_path: tuple[str, ...]
    kind: str
    text: str
    code_blocks: list[str] = field(default_factory=list)

    @property
    def heading(self) -> str:
        return self.heading_path[-1] if self.heading_path else ""


def classify_heading(heading: str) -> str | None:
    for kind, pattern in _HEADING_KINDS:
        if pattern.search(heading):
            return kind
    return None


def classify_content(text: str) -> str:
    """Fallback when the heading says nothing: what does the text itself sound like?"""
    head = text[:600]
    fix = _FIX_CUES.search(head)
    cause = _CAUSE_CUES.search(head)
    if fix and (not cause or fix.start() < cause.start()):
        return FIX
    if cause:
        return CAUSE
    if _ERROR_CUES.search(text) and text.lstrip().startswith("```"):
        return ERROR
    return OTHER


# Block structure only: sections need headings (whose raw text is the inline token's
# `content`) and code blocks, never inline markup, whose parsing is most of markdown-it's
# time on hostile input (1 MB of `[` or `_a` takes tens of seconds).
_md = MarkdownIt("commonmark", {"html": False}).enable("table").disable("inline")


def _heading(tokens: list, i: int) -> tuple[int, str]:
    """(level, text) of the heading that opens at token i."""
    return int(tokens[i].tag[1]), tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""


def headings(markdown: str) -> list[tuple[int, int, str]]:
    """(line, level, text) of every heading, as the section parser sees them (never one inside a code block)."""
    tokens = _md.parse(markdown)
    return [(tok.map[0], *_heading(tokens, i)) for i, tok in enumerate(tokens) if tok.type == "heading_open" and tok.map]


def parse_sections(markdown: str, title: str = "") -> list[Section]:
    """Markdown -> sections with heading paths; the title heading (h1) is the path root."""
    tokens = _md.parse(markdown)
    lines = markdown.split("\n")
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    current_start: int | None = 0
    current_path: tuple[str, ...] = ()
    current_code: list[str] = []
    bodies: list[tuple[tuple[str, ...], int, int, list[str]]] = []

    def close(end_line: int) -> None:
        if current_start is not None:
            bodies.append((current_path, current_start, end_line, list(current_code)))

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open" and tok.map:
            level, text = _heading(tokens, i)
            close(tok.map[0])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
            current_path = tuple(t for _, t in stack)
            current_start = tok.map[1]
            current_code = []
            i += 3
            continue
        if tok.type in ("fence", "code_block"):
            current_code.append(tok.content.rstrip("\n"))
        i += 1
    close(len(lines))

    for path, start, end, code in bodies:
        body = "\n".join(lines[start:end]).strip()
        if not body:
            continue
        shown_path = path
        if title and path and path[0].strip() == title.strip():
            shown_path = path[1:]  # the title says what the article is about, not what this part is
        kind = None
        for heading in reversed(shown_path):
            kind = classify_heading(heading)
            if kind:
                break
        if kind is not None:
            sections.append(Section(heading_path=shown_path, kind=kind, text=body, code_blocks=code))
        else:
            sections.extend(_classify_by_paragraph(Section(shown_path, OTHER, body, code)))
    return sections


def _classify_by_paragraph(s: Section) -> list[Section]:
    """No telling heading: classify paragraph by paragraph; a paragraph with no cue continues the last kind."""
    out: list[Section] = []
    kind = SYMPTOM if not s.heading_path else OTHER
    for para in split_paragraphs(s.text):
        if para.lstrip().startswith(("```", "~~~")):
            para_kind = ERROR if _ERROR_CUES.search(para) and kind in (SYMPTOM, ERROR, OTHER) else kind
        else:
            para_kind = classify_content(para)
            if para_kind == OTHER:
                para_kind = SYMPTOM if kind == ERROR else kind
        kind = para_kind
        code = [c for c in s.code_blocks if c and c in para]
        if out and out[-1].kind == para_kind:
            out[-1].text += "\n\n" + para
            out[-1].code_blocks.extend(code)
        else:
            out.append(Section(heading_path=s.heading_path, kind=para_kind, text=para, code_blocks=code))
    return out


def split_paragraphs(text: str) -> list[str]:
    """Blank-line paragraphs, keeping fenced code blocks whole."""
    paras: list[str] = []
    buf: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        stripped = line.strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            buf.append(line)
            continue
        if fence is not None:
            buf.append(line)
            if stripped.startswith(fence) and len(buf) > 1:
                fence = None
            continue
        if not stripped:
            if buf:
                paras.append("\n".join(buf).strip())
                buf = []
            continue
        buf.append(line)
    if buf:
        paras.append("\n".join(buf).strip())
    return [p for p in paras if p]


def section_text(sections: list[Section], kind: str) -> str:
    """All text of one kind, in article order: an article's root cause or fix."""
    return "\n\n".join(s.text for s in sections if s.kind == kind).strip()
