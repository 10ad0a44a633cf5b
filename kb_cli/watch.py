"""`kb watch LOG…`: follow growing log files and answer each new error once.

Blocks are found simply: a line that reads as an error (kb.signature.is_error_line — a
Python exception line, an `ERROR`/`FATAL`/`RuntimeError:`-style line, NCCL and CUDA
errors) opens a block; the block is answered once the file has been quiet for a moment
(`--settle`) or enough lines followed it, so a traceback's chained exceptions and the
lines after them arrive first. The search sees the block with the lines before it
(up to 200), and one masked signature is answered only once per run. Files are followed
by inode and size, so rotation (rename + new file) and truncation are picked up.
"""

from __future__ import annotations

import json
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import click

from kb.errors import KbError
from kb.signature import extract, is_error_line

from . import render
from .options import data_dir_option, open_kb

CONTEXT_LINES = 200
AFTER_LINES = 60
MAX_LINE = 4096


@dataclass
class Followed:
    """One log file as far as it has been read."""

    path: Path
    inode: int | None = None
    offset: int = 0
    partial: bytes = b""
    lines: deque = field(default_factory=lambda: deque(maxlen=CONTEXT_LINES))
    pending_since: float | None = None
    """When an error line arrived that has not been answered yet (None: nothing pending)."""
    after: int = 0

    def read_new(self, from_start: bool) -> list[str]:
        """New complete lines since the last read; reopens after rotation or truncation."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return []  # rotated away and not recreated yet
        if self.inode is None:
            self.inode, self.offset = st.st_ino, (0 if from_start else st.st_size)
        elif st.st_ino != self.inode or st.st_size < self.offset:
            self.inode, self.offset, self.partial = st.st_ino, 0, b""  # a new file under the same name
        if st.st_size == self.offset:
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read(st.st_size - self.offset)
        self.offset += len(data)
        data = self.partial + data
        *complete, self.partial = data.split(b"\n")
        return [line.decode("utf-8", "replace")[:MAX_LINE] for line in complete]


class Watcher:
    """Feeds lines in, says when a block is ready to answer, remembers what was answered."""

    def __init__(self, settle: float):
        self.settle = settle
        self.answered: set[str] = set()

    def feed(self, f: Followed, lines: list[str], now: float) -> None:
        for line in lines:
            f.lines.append(line)
            if f.pending_since is not None:
                f.after += 1
            elif line[:1] not in (" ", "\t") and is_error_line(line):
                f.pending_since, f.after = now, 0

    def ready(self, f: Followed, now: float, quiet_since: float) -> str | None:
        """The block to answer, once the file has settled after an error line (else None)."""
        if f.pending_since is None:
            return None
        if f.after < AFTER_LINES and now - quiet_since < self.settle:
            return None
        f.pending_since = None
        block = "\n".join(f.lines)
        f.lines.clear()
        sig = extract(block)
        key = sig.templates[0] if sig.templates else None
        if key is None or key in self.answered:
            return None
        self.answered.add(key)
        return block


@click.command()
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@data_dir_option
@click.option("--from-start", is_flag=True, help="Read what the files already hold, not only what is appended.")
@click.option("--interval", default=0.5, show_default=True, type=click.FloatRange(0.05, 60), help="Seconds between polls.")
@click.option("--settle", default=2.0, show_default=True, type=click.FloatRange(0, 600),
              help="Seconds of quiet after an error line before answering (the rest of the traceback arrives first).")
@click.option("-k", "top_k", default=3, show_default=True, type=click.IntRange(1, 50), help="How many articles.")
@click.option("--json", "as_json", is_flag=True, help="One JSON answer per line on stdout (for scripts).")
@click.option("--url", envvar="KB_URL", default=None, help="Ask a running `kb serve` at this URL (env KB_URL).")
def watch(logs, data_dir, from_start, interval, settle, top_k, as_json, url):
    """Follow LOG files and print an answer whenever a new error appears.

    Each distinct error (by its masked signature) is answered once. Rotation and
    truncation are followed. Stop with Ctrl-C.

    \b
    Examples:
      kb watch outputs/train.log
      kb watch --from-start logs/rank*.log
      kb watch --json /var/log/vllm/server.log | jq .results[0].title
    """
    files = [Followed(Path(p)) for p in logs]
    watcher = Watcher(settle)
    kb = None if url else open_kb(data_dir)
    quiet_since = {f.path: time.monotonic() for f in files}
    if not as_json:
        click.echo(render.rule(f"kb: watching {', '.join(str(p) for p in logs)} (Ctrl-C to stop)"), err=True)
    try:
        while True:
            now = time.monotonic()
            for f in files:
                lines = f.read_new(from_start)
                if lines:
                    quiet_since[f.path] = now
                    watcher.feed(f, lines, now)
                block = watcher.ready(f, now, quiet_since[f.path])
                if block:
                    _answer(block, f.path, kb, url, top_k, as_json)
            time.sleep(interval)
    except KeyboardInterrupt:
        pass


def _answer(block: str, path: Path, kb, url, top_k: int, as_json: bool) -> None:
    try:
        if url:
            from .remote import search_remote

            answer = search_remote(url, block, top_k)
        else:
            answer = kb.search(block, top_k=top_k, door="watch").as_dict()
    except KbError as exc:
        click.echo(f"kb: no answer for the error in {path} ({exc})", err=True)
        return
    if as_json:
        click.echo(json.dumps({"file": str(path), **answer}, ensure_ascii=False))
    else:
        click.echo(render.rule(f"kb: new error in {path}"))
        render.answer(answer)
    sys.stdout.flush()
