"""Load article files into `Document`s: front matter, scraped-page cleaning, validation.

A bad file is an `ArticleError` naming the file and line, so a batch can report it
and go on with the rest.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import yaml

from .config import MAX_ARTICLE_BYTES
from .errors import ArticleError, KbError
from .facts import parse_condition
from .text import detect_lang
from .scraped import clean_scraped_page

ARTICLE_SUFFIXES = (".md", ".markdown", ".txt")
_ID_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# Linear-time: the optional closing #s are stripped in Python (`_heading_title`); a regex
# like `(.+?)\s*#*\s*$` backtracks cubically on a heading line with a long run of spaces.
_FIRST_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(\S.*)$", re.M)
_KNOWN_KEYS = {"id", "title", "lang", "tags", "source"}


@dataclass(frozen=True)
class Document:
    """One article as read from disk, before parsing into sections."""

    id: str
    title: str
    lang: str
    tags: tuple[str, ...]
    source: str | None
    body: str
    path: str
    content_hash: str
    meta: dict = field(default_factory=dict)


def valid_article_id(article_id: str) -> bool:
    """Ids become file names and URL parts: a safe, bounded alphabet, no path tricks."""
    return bool(_ID_OK.fullmatch(article_id)) and ".." not in article_id


def _decode(raw: bytes, path: str) -> str:
    if b"\x00" in raw:
        raise ArticleError(path, "binary file (contains NUL bytes); articles are UTF-8 text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ArticleError(path, f"not valid UTF-8 (byte {exc.start}); re-save the file as UTF-8", line) from None


class _FrontMatterLoader(yaml.SafeLoader):
    """Safe YAML without aliases: front matter never needs them, and nested aliases
    (a "billion laughs" in a few hundred bytes) expand exponentially when walked."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in front matter",
                                              self.peek_event().start_mark)
        return super().compose_node(parent, index)


def _heading_title(m: re.Match) -> str:
    """The text of an ATX heading line, without an optional closing sequence of #s."""
    text = m.group(1).strip()
    bare = text.rstrip("#")
    if bare != text and bare and bare[-1] in " \t":
        text = bare.rstrip()
    return text


def _split_front_matter(text: str, path: str) -> tuple[dict, str, int]:
    """Return (front matter, body, line number where the body starts)."""
    if not text.startswith("---"):
        return {}, text, 1
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text, 1
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        raise ArticleError(path, "front matter opened with '---' is never closed", 1)
    try:
        meta = yaml.load("\n".join(lines[1:end]), Loader=_FrontMatterLoader) or {}
    except RecursionError:
        raise ArticleError(path, "broken front matter: nested too deeply", 2) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ArticleError(path, f"broken front matter: {problem}", line) from None
    if not isinstance(meta, dict):
        raise ArticleError(path, "front matter must be a mapping of keys to values", 2)
    if _has_surrogate(meta):
        line = next((n for n, ln in enumerate(lines[:end], 1) if _SURROGATE_ESCAPE.search(ln)), 2)
        raise ArticleError(path, "front matter holds a lone surrogate escape (such as \\ud800), which is not a "
                                 "character: remove it or write the character itself", line)
    return meta, "\n".join(lines[end + 1 :]), end + 2


_SURROGATE_ESCAPE = re.compile(r"\\[uU]0{0,4}[dD][89a-fA-F][0-9a-fA-F]{2}")


def _has_surrogate(value) -> bool:
    """YAML's double-quoted escapes can make a lone surrogate, which no UTF-8 file, database or
    JSON encoder accepts: such front matter is a bad file, reported and skipped."""
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_surrogate(v) for v in value)
    return False


def _as_tags(value, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [t for t in re.split(r"[,\s]+", value) if t]
    if not isinstance(value, list):
        raise ArticleError(path, "front matter 'tags' must be a list of strings", 2)
    return tuple(str(t).strip() for t in value if str(t).strip())


_PIPELINE = ("ingest.py", "facts.py", "text.py", "scraped.py", "parse.py", "chunk.py", "articles.py", "tokenize.py",
             "glossary.py", "data/glossary.tsv", "signature")
"""What turns an article file into index rows (sections, error templates, facts, tokens, expansion)."""


def _pipeline_fingerprint() -> bytes:
    root = Path(__file__).parent
    h = hashlib.sha256()
    for name in _PIPELINE:
        path = root / name
        for f in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            h.update(f.read_bytes())
    return h.digest()


_PIPELINE_FINGERPRINT = _pipeline_fingerprint()


def content_hash(raw: bytes) -> str:
    """The file's bytes and the code that reads them: after an upgrade that changes how articles are
    parsed (a new error-line rule, a tokenizer fix), `kb ingest` re-reads unchanged files too, so
    their templates and tokens match what queries get. Unchanged chunk text is still not re-encoded."""
    return hashlib.sha256(_PIPELINE_FINGERPRINT + raw).hexdigest()


def parse_document(raw: bytes, path: str, default_id: str | None = None) -> Document:
    """Bytes of one article file -> Document. `path` decides the format by its suffix."""
    if len(raw) > MAX_ARTICLE_BYTES:
        raise ArticleError(path, f"file is {len(raw)} bytes; the limit for one article is {MAX_ARTICLE_BYTES}")
    text = _decode(raw, path).replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ArticleError(path, "empty file")
    stem = Path(path).stem if default_id is None else default_id
    if path.endswith(".txt"):
        page = clean_scraped_page(text)
        meta: dict = {"byline": page.byline} if page.byline else {}
        body, title = page.markdown, page.title
    else:
        meta, body, _ = _split_front_matter(text, path)
        heading = _FIRST_HEADING.search(body)
        title = str(meta.get("title") or (_heading_title(heading) if heading else "")).strip()
    if not body.strip():
        raise ArticleError(path, "the article has front matter but no text")
    article_id = str(meta.get("id") or stem).strip()
    if not article_id:
        raise ArticleError(path, "the article has no id: put `id: some-id` in its front matter", 1)
    if not valid_article_id(article_id):
        raise ArticleError(path, f"invalid id {article_id!r}: use letters, digits, '.', '_' or '-' (max 128)", 2)
    if not title:
        title = next((ln.strip() for ln in body.splitlines() if ln.strip()), article_id)[:200]
    lang = str(meta.get("lang") or detect_lang(body)).strip().lower()
    if lang not in ("zh", "en"):
        lang = detect_lang(body)
    source = meta.get("source")
    if meta.get("applies_when") is not None:
        _check_applies_when(meta["applies_when"], text, path)
    if meta.get("draft") is True:
        raise ArticleError(path, "is a draft (`draft: true`): write its root cause and fix, then delete that line",
                           _front_line(text, "draft"))
    if meta.get("error_lines") is not None and not (
        isinstance(meta["error_lines"], list) and all(isinstance(x, str) for x in meta["error_lines"])
    ):
        raise ArticleError(path, "front matter 'error_lines' must be a list of quoted lines", _front_line(text, "error_lines"))
    extra = {k: v for k, v in meta.items() if k not in _KNOWN_KEYS}
    return Document(
        id=article_id,
        title=title,
        lang=lang,
        tags=_as_tags(meta.get("tags"), path),
        source=str(source).strip() if source else None,
        body=body,
        path=path,
        content_hash=content_hash(raw),
        meta=_jsonable(extra),
    )


def _front_line(text: str, key: str) -> int:
    """The line number of a front-matter key, for error messages."""
    return next((n for n, ln in enumerate(text.split("\n"), 1) if ln.startswith(key)), 2)


def _check_applies_when(condition, text: str, path: str) -> None:
    """A condition on the paste's numbers (kb/facts.py); a bad one names its front-matter line."""
    line = _front_line(text, "applies_when")
    if not isinstance(condition, str):
        raise ArticleError(path, "front matter 'applies_when' must be a condition in quotes, "
                                 "e.g. \"reserved_gib > 1.3 * allocated_gib\"", line)
    try:
        parse_condition(condition)
    except KbError as exc:
        raise ArticleError(path, str(exc), line) from None


def _jsonable(value):
    """Front matter may hold dates and other YAML types; keep them as plain JSON values."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def load_document(path: Path) -> Document:
    try:
        size = path.stat().st_size
        if size > MAX_ARTICLE_BYTES:  # refused before reading: a stray multi-GB file must not fill memory
            raise ArticleError(str(path), f"file is {size} bytes; the limit for one article is {MAX_ARTICLE_BYTES}")
        raw = path.read_bytes()
    except OSError as exc:
        raise ArticleError(str(path), f"cannot read: {exc.strerror or exc}") from None
    return parse_document(raw, str(path))


def find_article_files(paths: list[Path]) -> Iterator[Path]:
    """Files named directly, and article files under folders (sorted, hidden ones skipped)."""
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                rel = f.relative_to(p).parts
                if f.is_file() and f.suffix.lower() in ARTICLE_SUFFIXES and not any(
                    part.startswith(".") for part in rel
                ) and f.name.upper() not in ("README.MD", "AUTHORING.MD"):
                    yield f.resolve()
        elif p.exists():
            yield p.resolve()
        else:
            raise FileNotFoundError(f"{p}: no such file or directory")
