"""Cut sections into retrieval chunks: one per section, long ones split between paragraphs.

Code blocks are never split, and every chunk keeps its section's heading path and kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from .parse import Section, split_paragraphs

MAX_CHUNK_CHARS = 1200


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    heading_path: tuple[str, ...]
    kind: str
    text: str


def chunk_sections(sections: list[Section], max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section in sections:
        for piece in _pack(split_paragraphs(section.text), max_chars):
            chunks.append(Chunk(len(chunks), section.heading_path, section.kind, piece))
    return chunks


def _pack(paragraphs: list[str], max_chars: int) -> list[str]:
    """Greedy: fill a chunk up to max_chars; a paragraph (or code block) longer than that stands alone."""
    out: list[str] = []
    buf = ""
    for para in paragraphs:
        if buf and len(buf) + len(para) + 2 > max_chars:
            out.append(buf)
            buf = ""
        buf = f"{buf}\n\n{para}" if buf else para
    if buf:
        out.append(buf)
    return out
