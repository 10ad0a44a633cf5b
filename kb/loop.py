"""The knowledge loop: what was asked (masked), what helped, and the gaps that need an article.

Every search from a front door is recorded as its *masked signature* only — the paste's
primary error line after masking (numbers, paths, hosts, URLs, ids) and a scrub of anything
left that looks like a secret — never the raw text: pastes hold home paths, hostnames and
tokens. Searches that got no answer, or a 👎, are grouped by that signature into gaps (the
same template is the same gap). An admin closes a gap by linking it to an article (its
masked line joins the article's `error_lines` front matter, so the link lives in the
article's file and survives a re-ingest) or by drafting a new article from it.

The log is a SQLite file in the data dir, outside the snapshots, bounded in size (the
oldest rows go first).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import KbError, NotFoundError
from .results import SearchResponse
from .signature import extract, mask

LOG_FILE = "searches.sqlite"
MAX_SEARCHES = 50_000
MAX_FEEDBACK = 50_000
SIGNATURE_CHARS = 240
COMMENT_CHARS = 500
DOORS = ("api", "web", "cli", "slack", "mattermost", "dingtalk", "feishu", "wecom", "mcp", "run", "watch")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS searches (
    id TEXT PRIMARY KEY,      -- search_id, random
    at REAL NOT NULL,
    door TEXT NOT NULL,
    client TEXT,              -- salted hash of the asker (distinct users), never the address itself
    gap TEXT NOT NULL,        -- hash of the signature: one gap per masked error line
    signature TEXT NOT NULL,  -- the masked error line (or masked question), never the paste
    exception TEXT,
    verdict TEXT NOT NULL,
    top TEXT NOT NULL         -- JSON list of the top article ids
);
CREATE INDEX IF NOT EXISTS searches_at ON searches(at);
CREATE INDEX IF NOT EXISTS searches_gap ON searches(gap);
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    search_id TEXT NOT NULL,
    article_id TEXT NOT NULL,
    helpful INTEGER NOT NULL,
    comment TEXT,             -- masked and scrubbed like a signature
    client TEXT
);
CREATE INDEX IF NOT EXISTS feedback_search ON feedback(search_id);
CREATE TABLE IF NOT EXISTS links (gap TEXT PRIMARY KEY, article_id TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

# What masking may leave that still identifies a person or opens a door.
_SECRET_PREFIXED = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}|\b(?:hf|ghp|gho|ghs|ghu|glpat|xox[abprs])[_-][A-Za-z0-9_-]{8,}"
    r"|\bAKIA[0-9A-Z]{12,}|\beyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]+)*"
)
_SECRET_ASSIGN = re.compile(
    r"(?i)\b((?:api[_-]?key|access[_-]?key|secret|token|password|passwd|pwd|auth(?:orization)?|bearer)"
    r"[\"']?\s*[:=]\s*|bearer\s+)[\"']?[^\s\"',;()]+"
)
_LONG_RANDOM = re.compile(r"\b(?=[A-Za-z0-9_+/=-]*\d)(?=[A-Za-z0-9_+/=-]*[A-Za-z])[A-Za-z0-9_+/=-]{20,}\b")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_HOME = re.compile(r"(?:/home/|/Users/|/root/|[A-Za-z]:\\Users\\)[^\s'\"`:,;)]*")
_FQDN = re.compile(
    r"\b(?:[A-Za-z0-9-]+\.)+(?:com|net|org|io|ai|cn|jp|de|uk|fr|ru|in|us|edu|gov|co|dev|cloud|internal|local|lan|corp|intra)\b"
)
_HOST_AFTER = re.compile(r"(?i)\b(host(?:name)?[\s:=]+|on host\s+|node[\s:=]+)(?!<)[A-Za-z0-9][\w.-]*")


def scrub(text: str) -> str:
    """Masked text made safe to keep: secrets, e-mail addresses and home paths that masking left."""
    text = _SECRET_PREFIXED.sub("<SECRET>", text)
    text = _SECRET_ASSIGN.sub(lambda m: m.group(1) + "<SECRET>", text)
    text = _EMAIL.sub("<EMAIL>", text)
    text = _HOME.sub("<PATH>", text)
    text = _FQDN.sub("<HOST>", text)
    text = _HOST_AFTER.sub(lambda m: m.group(1) + "<HOST>", text)
    return _LONG_RANDOM.sub("<SECRET>", text)


def masked_signature(query: str, response: SearchResponse | None = None) -> tuple[str, str | None]:
    """(the one line kept for a search, its exception class): the primary masked error line,
    else the masked question; scrubbed either way."""
    sig = response.signature if response is not None and response.signature.get("templates") else None
    if sig:
        line, exception = sig["templates"][0], sig.get("exception")
    else:
        s = extract(query)
        if s.templates:
            line, exception = s.templates[0], s.exception
        else:
            words = " ".join((s.prose or query).split())
            line, exception = mask(words[: SIGNATURE_CHARS * 2]), None
    return scrub(" ".join(line.split()))[:SIGNATURE_CHARS], exception


def gap_id(signature: str) -> str:
    return hashlib.sha256(signature.encode("utf-8")).hexdigest()[:12]


@dataclass
class Gap:
    gap_id: str
    count: int
    """Searches with this signature that got no answer or a 👎."""
    users: int
    """Distinct askers among them (by salted hash; searches without one count as one asker each)."""
    example: str
    """The masked signature: the line an article would need to match."""
    exception: str | None
    closest: list[str]
    """The articles those searches came closest to, most frequent first."""
    doors: list[str]
    helpful: int
    unhelpful: int
    first_seen: float
    last_seen: float
    verdicts: dict[str, int] = field(default_factory=dict)
    linked_to: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


class SearchLog:
    """The searches.sqlite file of one data dir. Safe across threads and processes (WAL)."""

    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / LOG_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=10, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.executescript(_SCHEMA)
        self._salt = self._meta("salt") or self._set_meta("salt", secrets.token_hex(16))
        self._vote_key = self._meta("vote_key") or self._set_meta("vote_key", secrets.token_hex(32))
        self._since_trim = 0

    def close(self) -> None:
        self._conn.close()

    # -- recording ----------------------------------------------------------

    def record(self, query: str, response: SearchResponse, door: str, client: str | None = None) -> str:
        """Keep the masked signature, verdict and top articles of one search; returns its search_id."""
        signature, exception = masked_signature(query, response)
        search_id = secrets.token_hex(8)
        with self._lock:
            self._conn.execute(
                "INSERT INTO searches (id, at, door, client, gap, signature, exception, verdict, top) VALUES (?,?,?,?,?,?,?,?,?)",
                (search_id, time.time(), door if door in DOORS else "other", self._client(client), gap_id(signature),
                 signature, exception, response.verdict, json.dumps([r.article_id for r in response.results[:5]])),
            )
            self._trim()
        return search_id

    def feedback(self, search_id: str, article_id: str, helpful: bool, comment: str | None = None,
                 client: str | None = None) -> None:
        """A 👍/👎 on one result of a recorded search. Votes are evidence for a person to read in
        `gaps`; they never change the ranking by themselves."""
        with self._lock:
            row = self._conn.execute("SELECT top FROM searches WHERE id = ?", (search_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no search with id {search_id!r} (it may be older than the log keeps, or recording is off)")
            note = scrub(mask(" ".join(comment.split())))[:COMMENT_CHARS] if comment and comment.strip() else None
            self._conn.execute(
                "INSERT INTO feedback (at, search_id, article_id, helpful, comment, client) VALUES (?,?,?,?,?,?)",
                (time.time(), search_id, article_id, int(bool(helpful)), note, self._client(client)),
            )
            self._trim()

    def vote_token(self, search_id: str, article_id: str, helpful: bool) -> str:
        """A signature for a vote link (chat platforms without signed button callbacks): only kb,
        which holds the key, can mint a link that records a vote."""
        message = f"{search_id}\x00{article_id}\x00{int(bool(helpful))}".encode("utf-8", "surrogatepass")
        return hmac.new(self._vote_key.encode(), message, hashlib.sha256).hexdigest()[:32]

    def vote(self, search_id: str, article_id: str, helpful: bool, token: str, client: str | None = None) -> None:
        """Record a vote from a signed link; a link kb did not mint is refused."""
        if not hmac.compare_digest(self.vote_token(search_id, article_id, helpful).encode(),
                                   str(token).encode("utf-8", "surrogatepass")):
            raise KbError("this vote link is not one kb made (or it was changed): vote from the answer itself")
        self.feedback(search_id, article_id, helpful, None, client)

    def _client(self, client: str | None) -> str | None:
        return hashlib.sha256((self._salt + client).encode()).hexdigest()[:16] if client else None

    def _trim(self) -> None:
        self._since_trim += 1
        if self._since_trim < 100:
            return
        self._since_trim = 0
        for table, keep in (("searches", MAX_SEARCHES), ("feedback", MAX_FEEDBACK)):
            self._conn.execute(
                f"DELETE FROM {table} WHERE at < (SELECT at FROM {table} ORDER BY at DESC LIMIT 1 OFFSET ?)", (keep - 1,))

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> str:
        self._conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        return self._meta(key) or value

    # -- reading --------------------------------------------------------------

    def gaps(self, since: float | None = None, include_linked: bool = False, limit: int = 100) -> list[Gap]:
        """Unanswered and 👎 searches grouped by masked signature, most-hit first."""
        since = since or 0.0
        with self._lock:
            rows = self._conn.execute(
                """SELECT s.*, (SELECT SUM(helpful) FROM feedback f WHERE f.search_id = s.id) AS up,
                          (SELECT SUM(1 - helpful) FROM feedback f WHERE f.search_id = s.id) AS down
                   FROM searches s WHERE s.at >= ? ORDER BY s.at""", (since,)).fetchall()
            links = dict(self._conn.execute("SELECT gap, article_id FROM links").fetchall())
        groups: dict[str, list[sqlite3.Row]] = {}
        for r in rows:
            if r["verdict"] != "answer" or (r["down"] or 0) > 0:
                groups.setdefault(r["gap"], []).append(r)
        out: list[Gap] = []
        for gid, hits in groups.items():
            if gid in links and not include_linked:
                continue
            closest = Counter(a for h in hits for a in json.loads(h["top"])[:1])
            out.append(Gap(
                gap_id=gid, count=len(hits),
                users=len({h["client"] or h["id"] for h in hits}),
                example=hits[-1]["signature"], exception=hits[-1]["exception"],
                closest=[a for a, _ in closest.most_common(3)],
                doors=sorted({h["door"] for h in hits}),
                helpful=sum(h["up"] or 0 for h in hits), unhelpful=sum(h["down"] or 0 for h in hits),
                first_seen=hits[0]["at"], last_seen=hits[-1]["at"],
                verdicts=dict(Counter(h["verdict"] for h in hits)), linked_to=links.get(gid),
            ))
        out.sort(key=lambda g: (-g.users, -g.count, -g.last_seen))
        return out[:limit]

    def gap(self, gid: str) -> Gap:
        for g in self.gaps(include_linked=True, limit=10**9):
            if g.gap_id == gid:
                return g
        raise NotFoundError(f"no gap with id {gid!r}: `kb gaps` lists them")

    def mark_linked(self, gid: str, article_id: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO links (gap, article_id, at) VALUES (?,?,?)", (gid, article_id, time.time()))

    def raw_rows(self) -> list[dict]:
        """Everything stored, for tests and audits of what is kept."""
        with self._lock:
            return [dict(r) for t in ("searches", "feedback") for r in self._conn.execute(f"SELECT * FROM {t}")]


def parse_since(text: str | None) -> float | None:
    """'7d', '12h', '30m' -> the epoch time that long ago; None for no limit."""
    if not text:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*([dhm])\s*", text)
    if not m:
        raise KbError(f"--since {text!r}: use a number and d, h or m, e.g. 7d")
    return time.time() - int(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)]


# -- closing a gap ------------------------------------------------------------

_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*(?:\n|\Z)", re.S)


def add_error_line(text: str, line: str) -> str:
    """The article's text with `line` added to its `error_lines` front matter (created if
    missing). Edits the text in place rather than re-dumping the YAML, so the diff a
    reviewer sees in git is the one added line."""
    item = f"  - {json.dumps(line, ensure_ascii=False)}\n"
    m = _FRONT.match(text)
    if not m:
        return f"---\nerror_lines:\n{item}---\n{text}"
    front = m.group(1)
    block = re.search(r"^error_lines:[ \t]*\n((?:[ \t]+-.*\n)*)", front, re.M)
    if block:
        if json.dumps(line, ensure_ascii=False) in block.group(1):
            return text  # already linked
        at = m.start(1) + block.end()
        return text[:at] + item + text[at:]
    if re.search(r"^error_lines:", front, re.M):
        raise KbError("its front matter has an `error_lines` that is not a list of lines; fix it by hand")
    at = m.end(1)
    return text[:at] + "error_lines:\n" + item + text[at:]


def draft_text(gap: Gap) -> str:
    """A new article skeleton for a gap, with the zh/en headings the parser knows."""
    title = gap.exception or gap.example[:80]
    return (
        "---\n"
        f"id: gap-{gap.gap_id}\n"
        f"title: {json.dumps(title, ensure_ascii=False)}\n"
        "lang: en\n"
        "tags: [draft]\n"
        "draft: true   # remove this line when root cause and fix are written: drafts are not indexed\n"
        "error_lines:\n"
        f"  - {json.dumps(gap.example, ensure_ascii=False)}\n"
        "---\n"
        f"# {title}\n\n"
        "## Symptom / 现象\n\n"
        f"Seen in {gap.count} search(es) by {gap.users} user(s) via {', '.join(gap.doors)}"
        + (f"; closest existing articles: {', '.join(gap.closest)}" if gap.closest else "") + ".\n\n"
        "## Error / 报错信息\n\n"
        f"```text\n{gap.example}\n```\n\n"
        "## Root cause / 原因\n\n"
        "TODO: why it happens.\n\n"
        "## Fix / 解决办法\n\n"
        "TODO: what to do, with the commands or settings.\n\n"
        "## 中文摘要\n\n"
        "TODO: one paragraph in Chinese (现象、原因、解决办法), so a question in Chinese finds it; "
        "write `## In English` instead if the prose above is Chinese (corpus/AUTHORING.md, Language).\n\n"
        "常见说法：TODO: 3–5 ways people describe it in their own words, separated by `；`.\n"
    )
