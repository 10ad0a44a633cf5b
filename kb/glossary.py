"""Bilingual glossary: expand a query into the other language for lexical search.

Users ask in the language they think in, so a Chinese question has to find an
English article (and the reverse) even when the two share no error string.
BM25 cannot bridge that gap by itself; a curated zh<->en glossary can. Every
glossary term found in a text *fires* its entry, and the entry's terms in the
other language are appended to the text before it is searched (the same
expansion can be applied to articles at index time).

The data file (``kb/data/glossary.tsv``) is meant to be edited by people, so
loading is strict: a malformed line raises :class:`GlossaryError` naming the
file and line, rather than silently degrading retrieval.

Matching rules (kept in one place so the TSV header can describe them):

* English terms are case-insensitive and must sit on word boundaries, so
  ``hang`` does not fire inside ``change``. A space, ``-`` or ``_`` inside an
  English term matches any run of those or none, because users write
  ``kv cache``, ``kv-cache``, ``KVCache`` and ``kv_cache`` interchangeably. A
  trailing ``s``/``es`` plural is accepted (``checkpoint`` fires on
  ``checkpoints``).
* Chinese terms match as substrings (Chinese has no spaces to anchor on); any
  ASCII letters they contain are case-insensitive and, at the edges of the
  term, must not continue an ASCII word (``OOM了`` does not fire in ``ROOM了``).
  Separator flexibility applies to them only when they start with an ASCII
  letter or digit (``loss nan了``); ones starting with a Han character match
  literally.
* Where matches overlap, the longest wins (``梯度检查点`` beats ``梯度``), ties
  going to the earlier one.

Speed: Python's ``re`` tries the alternatives of a group one after another, so
a single regex over all terms (hundreds of distinct first characters) would
cost microseconds per character of Chinese text. Terms are therefore split by
their first character (see ``_first_kind``) into a trie regex that only wakes
up after a non-word character, a tiny regex for terms such as ``/dev/shm``, and
a dict-trie walk over runs of Han characters. ``scripts/bench_glossary.py``
measures load and per-query time.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Iterable

from .text import HAN_CHAR, HAN_RUN

__all__ = [
    "DEFAULT_PATH",
    "Expansion",
    "Glossary",
    "GlossaryEntry",
    "GlossaryError",
    "load_glossary",
]

#: The bundled, reviewed glossary (plain file beside this module, so no package
#: data machinery is needed).
DEFAULT_PATH = Path(__file__).parent / "data" / "glossary.tsv"


# All matcher regexes use re.ASCII: \w and \s are ASCII-only, so a Han character
# counts as a word boundary for English terms ("显存OOM了" contains "oom").
_FLAGS = re.ASCII
_SEP_CHARS = " \t\r\n\f\v_-"  # interchangeable separators inside a term
_SEP_CLASS = r"[\s_-]*"
_DROP_SEPS = str.maketrans("", "", _SEP_CHARS)
_ASCII_WORD = frozenset(string.ascii_lowercase + string.digits + "_")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_NOT_HAN = string.printable  # what a Chinese term may carry around its Han core (e.g. OOM了)

# What may follow a term, by how the term ends.
_PLURAL, _BOUNDED, _FREE = "plural", "bounded", "free"
_END_RE = {_PLURAL: r"(?:e?s)?(?!\w)", _BOUNDED: r"(?!\w)", _FREE: ""}
# The same rules split into (part captured with the term, check after it), for the word scanners.
_END_SPLIT = {_PLURAL: (r"(?:e?s)?", r"(?!\w)"), _BOUNDED: ("", r"(?!\w)"), _FREE: ("", "")}
_MEMO_LIMIT = 50_000  # cap on remembered matched-string lookups (inputs can vary without bound)

_SEP = "\x00sep"  # trie token for an interior separator run (never a real char)
_END = ""  # trie key marking "a term ends here" (never a real char or token)

_ZH, _EN = "zh", "en"


class GlossaryError(ValueError):
    """A malformed glossary; ``str()`` reads ``file:line: problem`` so editors can jump there."""

    def __init__(self, path: str | Path, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class GlossaryEntry:
    """One concept: its Chinese and English synonyms (most common first) and source line."""

    zh: tuple[str, ...]
    en: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class Expansion:
    """What :meth:`Glossary.expand` found in a text and what it proposes to add."""

    fired: tuple[str, ...]
    """Glossary terms found in the text, each once, in order of first appearance."""
    added_text: str
    """Other-language terms of the fired entries, space-separated, minus those already in the text."""


def _fold(text: str) -> str:
    """Lower-case for matching without changing string length (offsets must stay valid)."""
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII chars expand when lower-cased
        low = text.translate(_ASCII_LOWER)
    return low


def _key(folded: str) -> str:
    """Identity of a term for matching: folded, separators removed."""
    return folded.translate(_DROP_SEPS)


def _tokens(folded: str) -> list[str]:
    """Split a folded term into literal chars and _SEP markers for interior separator runs.

    Leading/trailing separators stay literal: ``-100`` must not match a bare ``100``.
    """
    start, end = 0, len(folded)
    while start < end and folded[start] in _SEP_CHARS:
        start += 1
    while end > start and folded[end - 1] in _SEP_CHARS:
        end -= 1
    toks = list(folded[:start])
    previous_was_sep = False
    for ch in folded[start:end]:
        if ch in _SEP_CHARS:
            if not previous_was_sep:
                toks.append(_SEP)
            previous_was_sep = True
        else:
            toks.append(ch)
            previous_was_sep = False
    toks.extend(folded[end:])
    return toks


def _end_kind(folded: str, side: str) -> str:
    """English terms ending in a letter take a plural and a word boundary; other ASCII word-char
    endings only the boundary; anything else (Han, punctuation) nothing."""
    last = folded[-1]
    if last not in _ASCII_WORD:
        return _FREE
    return _PLURAL if side == _EN and last.isalpha() else _BOUNDED


def _tok_regex(tok: str) -> str:
    if tok == _SEP:
        return _SEP_CLASS
    return tok if tok.isalnum() else re.escape(tok)


def _trie_regex(node: dict) -> str:
    """Regex for a trie node; children before the end marker so longer terms are preferred.

    Children keep insertion (file) order: deterministic, so reloading the same file yields the
    same pattern string and hits re's compile cache.
    """
    alts = [_tok_regex(tok) + _trie_regex(child) for tok, child in node.items() if tok != _END]
    end = node.get(_END)
    if end is None:
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    if not alts:
        return end
    if end == "":
        return "(?:" + "|".join(alts) + ")?"
    return "(?:" + "|".join(alts + [end]) + ")"


def _english_term_regex(term: str) -> re.Pattern[bytes]:
    """Bytes regex for one English term, same rules as the matcher, for the ASCII view of a text.

    The left word boundary is checked after the leading literal run, so the regex starts with
    a literal and re can scan for it quickly instead of trying every position.
    """
    folded = _fold(term)
    toks = _tokens(folded)
    lead = 0
    while lead < len(toks) and toks[lead] != _SEP:
        lead += 1
    head = "".join(_tok_regex(t) for t in toks[:lead])
    if folded[0] in _ASCII_WORD:
        head += r"(?<!\w" + "." * lead + ")"
    body = head + "".join(_tok_regex(t) for t in toks[lead:])
    return re.compile((body + _END_RE[_end_kind(folded, _EN)]).encode("ascii"))


def _longest_chunk(folded: str) -> str:
    """Longest separator-free piece of a term: a cheap substring pre-check before regex work."""
    return max(re.split(r"[\s_-]+", folded, flags=_FLAGS), key=len)


_Hit = tuple[str, GlossaryEntry, str]  # (term as written in the glossary, entry, side)

# Terms are matched by different machinery depending on their first character:
#   word  - ASCII letter/digit/_ (all English terms, and mixed ones like OOM了): one regex
#           holding a trie per end kind (so the end rule is written once, not at every leaf,
#           which keeps compilation fast), tried only after a non-word char;
#   other - any other non-Han char (/dev/shm, .so, -100): a small trie regex;
#   han   - a Han character: a dict trie walked from each Han position (a dict lookup is
#           O(1) where a regex alternation over ~500 first characters is linear).
_WORD, _OTHER, _HAN_KIND = "word", "other", "han"


def _first_kind(folded: str) -> str:
    first = folded[0]
    if first in _ASCII_WORD:
        return _WORD
    return _HAN_KIND if HAN_CHAR.match(first) else _OTHER


class Glossary:
    """A loaded glossary with a fast matcher for both languages."""

    def __init__(self, entries: Iterable[GlossaryEntry]) -> None:
        self.entries: tuple[GlossaryEntry, ...] = tuple(entries)
        # Regex-matched terms are looked up by key (folded, separators removed) per side.
        self._keys: dict[str, dict[str, list[_Hit]]] = {_ZH: {}, _EN: {}}
        self._memo: dict[str, list[_Hit] | None] = {}
        # Han-initial terms: a dict trie; node[_END] = (hits, needs a right word boundary).
        self._han_trie: dict = {}
        han_hits: dict[str, list[_Hit]] = {}
        tries: dict[str, dict] = {_PLURAL: {}, _BOUNDED: {}, _FREE: {}, _OTHER: {}}
        for entry in self.entries:
            for side, terms in ((_ZH, entry.zh), (_EN, entry.en)):
                for term in terms:
                    self._add(side, term, entry, tries, han_hits)
        # One word scanner: it consumes only the non-word char before a term and captures, in
        # optional lookaheads, the longest term of each end kind starting there; the trailing
        # conditional drops positions where nothing matched. So one finditer (in C) yields every
        # start position with candidates, overlaps included.
        parts, kinds = [], []
        for kind in (_PLURAL, _BOUNDED, _FREE):
            if tries[kind]:
                captured, after = _END_SPLIT[kind]
                parts.append(f"(?:(?=({_trie_regex(tries[kind])}{captured}){after}))?")
                kinds.append(kind)
        self._word_groups = tuple(range(1, len(kinds) + 1))
        self._word_re: re.Pattern[str] | None = None
        if parts:
            firsts = "".join(sorted(set().union(*(tries[k] for k in kinds))))
            some_group = "(?!)"
            for group in reversed(self._word_groups):
                some_group = f"(?({group})|{some_group})"
            regex = f"[^\\w](?=[{firsts}])" + "".join(parts) + some_group
            self._word_re = re.compile(regex, _FLAGS)
        self._other_re = re.compile(_trie_regex(tries[_OTHER]), _FLAGS) if tries[_OTHER] else None
        # For expand(), which must not re-add terms already in the text: the folded form of every
        # term; for English terms a cheap substring pre-check (_chunk) and, lazily, a bytes regex
        # run on the ASCII view of the text; for Chinese terms how far they reach beyond Han.
        self._folded: dict[str, str] = {t: _fold(t) for e in self.entries for t in e.zh + e.en}
        self._chunk: dict[str, bytes] = {
            t: _longest_chunk(self._folded[t]).encode("ascii") for e in self.entries for t in e.en
        }
        self._present_re: dict[str, re.Pattern[bytes]] = {}
        self._han_reach = max(
            (max(len(f) - len(f.lstrip(_NOT_HAN)), len(f) - len(f.rstrip(_NOT_HAN)))
             for t, f in self._folded.items() if HAN_CHAR.search(f)),
            default=0,
        )

    def _add(
        self,
        side: str,
        term: str,
        entry: GlossaryEntry,
        tries: dict[str, dict],
        han_hits: dict[str, list[_Hit]],
    ) -> None:
        folded = _fold(term)
        if not folded.strip():
            raise GlossaryError("<entries>", entry.line, f"empty {side} term")
        if side == _EN and not term.isascii():
            raise GlossaryError("<entries>", entry.line, f"en term {term!r} is not ASCII")
        first = _first_kind(folded)
        if first == _HAN_KIND:
            hits = han_hits.setdefault(folded, [])
        else:
            hits = self._keys[side].setdefault(_key(folded), [])
        if any(e is entry for _, e, _ in hits):
            return  # same spelling variant already listed in this entry (e.g. all-reduce/allreduce)
        hits.append((term, entry, side))
        if len(hits) > 1:
            return  # already indexed for another entry (a term with two senses)
        end_kind = _end_kind(folded, side)
        if first == _HAN_KIND:
            node = self._han_trie
            for ch in folded:
                node = node.setdefault(ch, {})
            node[_END] = (hits, end_kind != _FREE)
            return
        node = tries[end_kind if first == _WORD else _OTHER]
        for tok in _tokens(folded):
            node = node.setdefault(tok, {})
        node[_END] = _END_RE[end_kind] if first == _OTHER else ""

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"Glossary({len(self.entries)} entries)"

    # -- matching ---------------------------------------------------------------

    def _lookup(self, matched: str) -> list[_Hit] | None:
        memo = self._memo
        if matched in memo:
            return memo[matched]
        side = _ZH if HAN_CHAR.search(matched) else _EN
        keys = self._keys[side]
        key = _key(matched)
        hits = keys.get(key)
        if hits is None and side == _EN:  # the match may include a plural suffix
            if key.endswith("s"):
                hits = keys.get(key[:-1])
            if hits is None and key.endswith("es"):
                hits = keys.get(key[:-2])
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        memo[matched] = hits
        return hits

    def _candidates(self, low: str) -> list[tuple[int, int, list[_Hit]]]:
        """Longest match starting at each position (low carries a leading space)."""
        out: list[tuple[int, int, list[_Hit]]] = []
        lookup = self._lookup
        if self._word_re is not None:
            groups = self._word_groups
            for m in self._word_re.finditer(low):
                best = None  # longest of the (up to 3) terms starting here
                for group in groups:
                    text = m.group(group)
                    if text and (best is None or len(text) > len(best[0])) and (hits := lookup(text)):
                        best = (text, m.start(group), hits)
                if best is not None:
                    out.append((best[1], best[1] + len(best[0]), best[2]))
        if self._other_re is not None:
            search = self._other_re.search
            pos = 0
            while (m := search(low, pos)) is not None:
                hits = lookup(m.group())
                if hits:
                    out.append((m.start(), m.end(), hits))
                pos = m.start() + 1  # the next match may start inside this one
        trie, n = self._han_trie, len(low)
        for run in HAN_RUN.finditer(low):
            i = run.start()
            for ch in run.group():
                node = trie.get(ch)
                if node is not None:
                    best = None
                    j = i + 1
                    while True:
                        terminal = node.get(_END)
                        if terminal is not None and not (
                            terminal[1] and j < n and low[j] in _ASCII_WORD
                        ):
                            best = (j, terminal[0])
                        if j >= n or (node := node.get(low[j])) is None:
                            break
                        j += 1
                    if best is not None:
                        out.append((i, best[0], best[1]))
                i += 1
        return out

    def _fire(self, low: str) -> list[_Hit]:
        """Hits in folded text, longest-match-wins across both languages, in text order."""
        candidates = self._candidates(low)
        if not candidates:
            return []
        candidates.sort(key=lambda c: (c[0] - c[1], c[0]))
        taken = bytearray(len(low))
        chosen: list[tuple[int, list[_Hit]]] = []
        for start, end, hits in candidates:
            if taken.find(1, start, end) < 0:
                taken[start:end] = b"\x01" * (end - start)
                chosen.append((start, hits))
        chosen.sort(key=itemgetter(0))
        out: list[_Hit] = []
        seen: set[tuple[str, int]] = set()
        for _, hits in chosen:
            for hit in hits:
                ident = (hit[0], id(hit[1]))
                if ident not in seen:
                    seen.add(ident)
                    out.append(hit)
        return out

    def match(self, text: str) -> list[tuple[str, GlossaryEntry]]:
        """Glossary terms found in text (case-insensitive for English; English terms must match on
        word boundaries, Chinese terms as substrings; longest match wins where terms overlap).

        Each (term, entry) pair is reported once, in order of first appearance. A term listed in
        two entries (two senses) yields one pair per entry.
        """
        return [(term, entry) for term, entry, _ in self._fire(" " + _fold(text))]

    def _present_en(self, term: str, ascii_low: bytes) -> bool:
        """Whether an English term already occurs in the text (given its ASCII view)."""
        if self._chunk[term] not in ascii_low:
            return False
        pattern = self._present_re.get(term)
        if pattern is None:
            pattern = self._present_re[term] = _english_term_regex(term)
        return pattern.search(ascii_low) is not None

    def _han_context(self, low: str) -> str:
        """The parts of a text where a Chinese term could occur (every zh term contains Han)."""
        reach = self._han_reach
        return "\x00".join(
            low[max(0, m.start() - reach) : m.end() + reach] for m in HAN_RUN.finditer(low)
        )

    def expand(self, text: str) -> Expansion:
        """Fired terms plus the other-language synonyms of their entries, for query expansion."""
        low = " " + _fold(text)
        # Presence checks run on small views, not the whole (UCS-2 if any Han) text: English terms
        # on ASCII bytes (non-ASCII -> "?", still a word boundary), Chinese terms near Han runs.
        ascii_low = low.encode("ascii", "replace")
        han_context: str | None = None
        hits = self._fire(low)
        fired = tuple(dict.fromkeys(term for term, _, _ in hits))
        added: list[str] = []
        seen_terms: set[str] = set()
        done: set[tuple[int, str]] = set()
        for _, entry, side in hits:
            if (id(entry), side) in done:
                continue
            done.add((id(entry), side))
            other_side, others = (_EN, entry.en) if side == _ZH else (_ZH, entry.zh)
            for term in others:
                folded = self._folded[term]
                if folded in seen_terms:
                    continue
                seen_terms.add(folded)
                if other_side == _EN:
                    present = self._present_en(term, ascii_low)
                else:
                    if han_context is None:
                        han_context = self._han_context(low)
                    present = folded in han_context
                if not present:
                    added.append(term)
        return Expansion(fired=fired, added_text=" ".join(added))


# -- loading --------------------------------------------------------------------


def _split_side(raw: str, side: str, source: str, lineno: int) -> tuple[str, ...]:
    terms = tuple(t.strip() for t in raw.split("|"))
    seen: set[str] = set()
    for term in terms:
        if not term:
            raise GlossaryError(source, lineno, f"empty term on the {side} side (stray or doubled '|'?)")
        if not term.isprintable():
            raise GlossaryError(source, lineno, f"{side} term {term!r} contains control characters")
        if side == _ZH:
            if not HAN_CHAR.search(term):
                raise GlossaryError(source, lineno, f"zh term {term!r} has no Chinese characters")
        else:
            if HAN_CHAR.search(term):
                raise GlossaryError(source, lineno, f"en term {term!r} contains Chinese characters")
            if not term.isascii():
                raise GlossaryError(source, lineno, f"en term {term!r} is not ASCII")
            if not any(ch.isalnum() for ch in term):
                raise GlossaryError(source, lineno, f"en term {term!r} has no letters or digits")
        folded = _fold(term)
        if folded in seen:
            raise GlossaryError(source, lineno, f"duplicate {side} term {term!r} in this entry")
        seen.add(folded)
    return terms


def _parse(text: str, source: str) -> list[GlossaryEntry]:
    entries: list[GlossaryEntry] = []
    first_line: dict[tuple[frozenset[str], frozenset[str]], int] = {}
    # split("\n"), not splitlines(): line numbers must agree with editors (\f, \x1c... are not breaks)
    for lineno, raw_line in enumerate(text.split("\n"), start=1):
        line = raw_line.rstrip()  # invisible trailing spaces/tabs should not break a line
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise GlossaryError(
                source, lineno, f"expected 2 tab-separated fields (zh<TAB>en), found {len(fields)}"
            )
        zh = _split_side(fields[0], _ZH, source, lineno)
        en = _split_side(fields[1], _EN, source, lineno)
        signature = (frozenset(map(_fold, zh)), frozenset(map(_fold, en)))
        if signature in first_line:
            raise GlossaryError(source, lineno, f"duplicate entry (same as line {first_line[signature]})")
        first_line[signature] = lineno
        entries.append(GlossaryEntry(zh=zh, en=en, line=lineno))
    return entries


def load_glossary(path: Path | str | None = None) -> Glossary:
    """Load and validate a glossary TSV (default: the bundled ``kb/data/glossary.tsv``).

    Raises GlossaryError (``file:line: problem``) for malformed content; a missing
    file raises the usual OSError.
    """
    path = Path(path) if path is not None else DEFAULT_PATH
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        lineno = raw.count(b"\n", 0, exc.start) + 1
        raise GlossaryError(path, lineno, "not valid UTF-8") from exc
    return Glossary(_parse(text, str(path)))
