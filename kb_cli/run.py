"""`kb run -- CMD…`: run a command as if kb were not there, and answer when it fails.

The command's output reaches the terminal unchanged and as it comes: through a
pseudo-terminal when stdout is one (so the command keeps its colours and progress bars),
else through pipes. The last 64 KB of it is kept; when the command exits non-zero or dies
of a signal, kb searches that tail and prints the answer on stderr. kb exits with the
command's own status, so `kb run` can wrap any step of a script or a Makefile.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import deque

import click

from kb.config import MAX_QUERY_BYTES
from kb.errors import KbError
from kb.text import clean, decode, tail

from . import render
from .options import data_dir_option, open_kb


class Tail:
    """The last `limit` bytes written, from any thread, in arrival order."""

    def __init__(self, limit: int = MAX_QUERY_BYTES):
        self.limit, self.size = limit, 0
        self._parts: deque[bytes] = deque()
        self._lock = threading.Lock()

    def add(self, data: bytes) -> None:
        with self._lock:
            self._parts.append(data)
            self.size += len(data)
            while self._parts and self.size - len(self._parts[0]) >= self.limit:
                self.size -= len(self._parts.popleft())

    def text(self) -> str:
        with self._lock:
            data = b"".join(self._parts)
        return tail(decode(data), self.limit)[0]


def _copy(source: int, sink, kept: Tail) -> None:
    """Bytes from a file descriptor to a binary stream, until every writer has closed it."""
    while True:
        try:
            data = os.read(source, 65536)
        except OSError:  # a pty's master reads EIO once the last slave end is closed
            break
        if not data:
            break
        kept.add(data)
        try:
            sink.write(data)
            sink.flush()
        except (BrokenPipeError, ValueError):
            pass  # our own output went away (`kb run … | head`): keep draining the command


def _spawn_with_pty(argv: list[str], kept: Tail) -> subprocess.Popen:
    import fcntl
    import pty
    import termios

    master, slave = pty.openpty()
    try:  # the command's progress bars should fit this terminal
        fcntl.ioctl(slave, termios.TIOCSWINSZ, fcntl.ioctl(sys.stdout.fileno(), termios.TIOCGWINSZ, b"\0" * 8))
    except (OSError, ValueError, AttributeError):
        pass  # not a real terminal after all: the default size will do
    proc = subprocess.Popen(argv, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)  # only the command (and what it forks) holds the slave now
    reader = threading.Thread(target=_copy, args=(master, sys.stdout.buffer, kept), daemon=True)
    reader.start()
    proc._kb_readers = [reader]  # type: ignore[attr-defined]
    proc._kb_close = [master]  # type: ignore[attr-defined]
    return proc


def _spawn_with_pipes(argv: list[str], kept: Tail) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    readers = [
        threading.Thread(target=_copy, args=(proc.stdout.fileno(), sys.stdout.buffer, kept), daemon=True),
        threading.Thread(target=_copy, args=(proc.stderr.fileno(), sys.stderr.buffer, kept), daemon=True),
    ]
    for r in readers:
        r.start()
    proc._kb_readers = readers  # type: ignore[attr-defined]
    proc._kb_close = []  # type: ignore[attr-defined]
    return proc


def run_command(argv: list[str], use_pty: bool | None = None) -> tuple[int, str]:
    """Run `argv` with its output passed through; (exit status as a shell reports it, output tail)."""
    kept = Tail()
    use_pty = sys.stdout.isatty() and sys.platform != "win32" if use_pty is None else use_pty
    try:
        proc = (_spawn_with_pty if use_pty else _spawn_with_pipes)(argv, kept)
    except FileNotFoundError:
        click.echo(f"kb run: command not found: {argv[0]}", err=True)
        sys.exit(127)  # what a shell answers
    except PermissionError:
        click.echo(f"kb run: not executable: {argv[0]}", err=True)
        sys.exit(126)
    # Ctrl-C reaches the command (same process group); kb stays to answer. A TERM to kb is passed on.
    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: proc.send_signal(signal.SIGTERM))
    try:
        status = proc.wait()
        for r in proc._kb_readers:  # type: ignore[attr-defined]
            r.join()  # forked children may still hold the output open: wait for them to close it
    finally:
        signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGTERM, previous_term)
        for fd in proc._kb_close:  # type: ignore[attr-defined]
            os.close(fd)
    return (128 - status if status < 0 else status), kept.text()


def _answer(query: str, data_dir, url: str | None, top_k: int) -> dict:
    if url:
        from .remote import search_remote

        return search_remote(url, query, top_k)
    return open_kb(data_dir).search(query, top_k=top_k, door="run").as_dict()


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@data_dir_option
@click.option("-k", "top_k", default=3, show_default=True, type=click.IntRange(1, 50), help="How many articles.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON (on stderr, like the human answer).")
@click.option("--url", envvar="KB_URL", default=None, help="Ask a running `kb serve` at this URL (env KB_URL).")
def run(command, data_dir, top_k, as_json, url):
    """Run COMMAND; if it fails, say which article explains the error.

    The command's output is passed through unchanged (colours, progress bars,
    input). If it exits non-zero or dies of a signal, kb searches the last 64 KB of
    its output and prints the answer on stderr. kb exits with the command's own
    status, and adds nothing when the command succeeds.

    \b
    Examples:
      kb run -- torchrun --nproc_per_node 8 train.py --config sft.yaml
      kb run -- python -c "import flash_attn"
      KB_URL=http://kb.internal:8000 kb run -- deepspeed train.py
    """
    status, output = run_command(list(command))
    if status == 0:
        sys.exit(0)
    query = clean(output).strip()
    if not query:
        click.echo(f"kb: {command[0]} exited with status {status} and printed nothing to search.", err=True)
        sys.exit(status)
    try:
        answer = _answer(query, data_dir, url, top_k)
    except KbError as exc:
        click.echo(f"kb: no answer for this failure ({exc})", err=True)
        sys.exit(status)
    if as_json:
        click.echo(json.dumps({"exit_status": status, **answer}, ensure_ascii=False, indent=2), err=True)
    else:
        click.echo(render.rule(f"kb: {command[0]} exited with status {status}"), err=True)
        render.answer(answer, err=True)
    sys.exit(status)
