"""The CLI with messy input: long pastes, stray bytes, a busy port — an answer or one clear line, never a traceback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from conftest import REPO, cli_env

LONG_LOG = ("step 1200 | loss 1.23 | lr 2e-5 | tokens/s 10432\n" * 3000 + "\xff\n").encode("utf-8", "surrogateescape")
TAIL = b"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nRuntimeError: CUDA error: device-side assert triggered\n"


def test_search_answers_a_paste_longer_than_64kb_from_its_tail(kb, settings):
    paste = LONG_LOG + b"\xff\xfe stray bytes from the terminal\n" + TAIL
    assert len(paste) > 128 * 1024
    proc = subprocess.run([sys.executable, "-m", "kb_cli", "search", "--json", "-k", "2"], input=paste,
                          capture_output=True, env=cli_env(settings.data_dir), cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"answering from its last 64 KB" in proc.stderr and b"Traceback" not in proc.stderr
    answer = json.loads(proc.stdout)
    assert "device-side assert" in answer["signature"]["exception"] + " ".join(answer["signature"]["lines"]) or answer["results"]


def test_a_surrogate_in_the_query_argument_is_answered_locally_and_remotely(kb, settings, tmp_path):
    env = cli_env(settings.data_dir)
    arg = "CUDA out of memory \udcff"  # what surrogateescape makes of a stray byte in argv
    proc = subprocess.run([sys.executable, "-m", "kb_cli", "search", "--json", arg.encode("utf-8", "surrogateescape")],
                          capture_output=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode()
    remote = subprocess.run([sys.executable, "-m", "kb_cli", "search", "--url", "http://127.0.0.1:9",
                             arg.encode("utf-8", "surrogateescape")], capture_output=True, env=env, cwd=REPO, timeout=60)
    assert remote.returncode == 1 and b"cannot reach kb server" in remote.stderr  # not a UnicodeEncodeError
    assert b"Traceback" not in remote.stderr


def test_serve_on_a_busy_port_says_what_to_do(kb, settings):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "kb_cli", "serve", "--port", str(port)], capture_output=True,
                              text=True, env=cli_env(settings.data_dir), cwd=REPO, timeout=60)
    assert proc.returncode == 1
    assert "already in use" in proc.stderr and f"--port {port + 1}" in proc.stderr and "make run PORT=" in proc.stderr
    assert "Traceback" not in proc.stderr
