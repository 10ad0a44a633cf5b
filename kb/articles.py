"""From a Document to what the index stores: sections, chunks, root cause, fix, error templates."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .chunk import Chunk, chunk_sections
from .ingest import Document
from .parse import CAUSE, ERROR, FIX, parse_sections, section_text
from .signature import extract, is_error_line, mask
from .glossary import Glossary
from .tokenize import Tokenizer

# Error text quoted in prose: "…", “…”, `…`, 「…」
_QUOTED = re.compile(r"[\"“「`]([^\"”」`\n]{12,400})[\"”」`]")
_MAX_ERROR_LINES = 40


@dataclass(frozen=True)
class PreparedChunk:
    chunk: Chunk
    tokens: tuple[str, ...]
    bridge_tokens: tuple[str, ...]
    """Glossary terms of the other language for this chunk: lets a question in one language meet an article in the other."""
    embed_hash: str


@dataclass(frozen=True)
class PreparedArticle:
    doc: Document
    root_cause: str
    fix: str
    error_lines: tuple[str, ...]
    templates: tuple[str, ...]
    components: tuple[str, ...]
    chunks: tuple[PreparedChunk, ...]


LINKED_HEADING = "Error (linked)"
"""The section that carries an article's `error_lines` front matter."""


def article_error_lines(sections, body: str) -> tuple[list[str], list[str]]:
    """The article's own error lines (error sections, code blocks, quoted errors) and their components."""
    lines: list[str] = []
    components: list[str] = []
    blocks = [s.text for s in sections if s.kind == ERROR]
    blocks += [c for s in sections for c in s.code_blocks]
    for block in blocks:
        sig = extract(block)
        lines.extend(sig.lines)
        components.extend(sig.components)
    for m in _QUOTED.finditer(body):
        if is_error_line(m.group(1)):
            lines.append(m.group(1).strip())
    return _dedupe(lines)[:_MAX_ERROR_LINES], _dedupe(components)


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    return [x for x in items if x and not (x in seen or seen.add(x))]


def embed_text(title: str, heading_path, text: str) -> str:
    """What the dense model sees for a chunk; its hash keys the embedding cache."""
    heading = " > ".join(heading_path)
    return f"{title}\n{heading}\n{text}" if heading else f"{title}\n{text}"


def prepare_article(doc: Document, tokenizer: Tokenizer, glossary: Glossary) -> PreparedArticle:
    sections = parse_sections(doc.body, doc.title)
    error_lines, components = article_error_lines(sections, doc.body)
    linked = [line for line in doc.meta.get("error_lines") or [] if line not in error_lines]
    if linked:
        # Lines linked by the knowledge loop (`kb link`, kb/loop.py) live in the front matter; they
        # are indexed as one more error section, so words, meaning and templates all find them.
        sections = parse_sections(f"{doc.body}\n\n## {LINKED_HEADING}\n\n```text\n" + "\n".join(linked) + "\n```\n", doc.title)
        error_lines = _dedupe([*error_lines, *linked])
    chunks = chunk_sections(sections)
    templates = [mask(line) for line in error_lines]  # aligned with error_lines
    prepared: list[PreparedChunk] = []
    for ch in chunks:
        heading = " > ".join(ch.heading_path)
        embedded = embed_text(doc.title, ch.heading_path, ch.text)
        text = f"{doc.title}\n{heading}\n{ch.text}"
        tokens = tokenizer(text)
        bridge = tokenizer(glossary.expand(text).added_text)
        prepared.append(
            PreparedChunk(ch, tuple(tokens), tuple(bridge), hashlib.sha256(embedded.encode()).hexdigest())
        )
    return PreparedArticle(
        doc=doc,
        root_cause=section_text(sections, CAUSE),
        fix=section_text(sections, FIX),
        error_lines=tuple(error_lines),
        templates=tuple(templates),
        components=tuple(components),
        chunks=tuple(prepared),
    )
