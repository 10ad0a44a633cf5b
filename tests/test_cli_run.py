"""`kb run` and `kb watch` as a user runs them: the real console script over the fixture index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import ThreadedServer, cli_env

KB = [sys.executable, "-m", "kb_cli"]
OOM_LINE = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.10 GiB. GPU 0 has a total capacity of 79.32 GiB of which 1.20 GiB is free."
OOM_TITLE = "CUDA out of memory only during evaluation"


def kb_run(settings, *command: str, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([*KB, "run", "--", *command], env=cli_env(settings.data_dir, **extra),
                          capture_output=True, timeout=120)


def test_a_failing_command_gets_the_answer_and_keeps_its_status(kb, settings):
    out = kb_run(settings, sys.executable, "-c", f"print('epoch 1 eval'); raise RuntimeError({OOM_LINE!r})")
    assert out.returncode == 1
    assert out.stdout == b"epoch 1 eval\n"  # the command's own output, untouched
    err = out.stderr.decode()
    assert "Traceback (most recent call last)" in err and OOM_LINE in err  # its stderr passes through
    assert "exited with status 1" in err and OOM_TITLE in err and "Fix:" in err and "[cuda-oom-eval]" in err


def test_a_succeeding_command_adds_nothing(kb, settings):
    out = kb_run(settings, sys.executable, "-c", "import sys; print('done'); print('warn', file=sys.stderr)")
    assert (out.returncode, out.stdout, out.stderr) == (0, b"done\n", b"warn\n")


def test_exit_status_and_signals_are_the_commands(kb, settings):
    assert kb_run(settings, "sh", "-c", "exit 3").returncode == 3
    killed = kb_run(settings, sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert killed.returncode == 128 + 15
    missing = kb_run(settings, "no-such-command-kb-test")
    assert missing.returncode == 127 and b"command not found" in missing.stderr


def test_binary_output_with_colours_passes_through_byte_for_byte(kb, settings):
    script = (
        "import sys\n"
        "chunk = ''.join(f'\\x1b[3{i % 8}mline {i} \\u2588 \\x1b[0m\\r progress {i}%\\n' for i in range(4000))\n"
        "sys.stdout.buffer.write(chunk.encode() + bytes(range(256)))\n"
    )
    expected = subprocess.run([sys.executable, "-c", script], capture_output=True).stdout
    assert len(expected) > 64 * 1024
    out = kb_run(settings, sys.executable, "-c", script)
    assert out.returncode == 0 and out.stdout == expected and out.stderr == b""


def test_forked_writers_are_waited_for(kb, settings):
    out = kb_run(settings, "sh", "-c", f"(sleep 0.5; echo {OOM_LINE!r} >&2) & echo started; exit 2")
    assert out.returncode == 2
    assert out.stdout == b"started\n"
    err = out.stderr.decode()
    assert err.index(OOM_LINE) < err.index("exited with status 2")  # the child's line was read, then answered
    assert OOM_TITLE in err


def test_json_answer_and_a_missing_index_still_keep_the_status(kb, settings, tmp_path):
    out = subprocess.run([*KB, "run", "--json", "--", sys.executable, "-c", f"raise SystemExit({OOM_LINE!r})"],
                         env=cli_env(settings.data_dir), capture_output=True, timeout=120)
    assert out.returncode == 1
    body = out.stderr.decode()
    answer = json.loads(body[body.index("{"):])
    assert answer["exit_status"] == 1 and answer["results"][0]["article_id"] == "cuda-oom-eval"
    lost = subprocess.run([*KB, "run", "--", "sh", "-c", "echo boom >&2; exit 4"],
                          env=cli_env(tmp_path / "empty"), capture_output=True, timeout=120)
    assert lost.returncode == 4 and b"kb: no answer" in lost.stderr and b"kb ingest" in lost.stderr


def test_kb_run_asks_a_server_with_kb_url(kb, api_settings):
    from api.main import create_app

    with ThreadedServer(create_app(api_settings, kb=kb)) as server:
        out = subprocess.run([*KB, "run", "--", sys.executable, "-c", f"raise RuntimeError({OOM_LINE!r})"],
                             env=cli_env(api_settings.data_dir / "unused", KB_URL=server.url), capture_output=True, timeout=120)
    assert out.returncode == 1 and OOM_TITLE in out.stderr.decode()


@pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux `script` to give kb a terminal")
def test_on_a_terminal_the_command_sees_a_terminal(kb, settings):
    """Colours and progress bars depend on it: through a pty, the command's stdout is a tty."""
    inner = f"{sys.executable} -m kb_cli run -- {sys.executable} -c \"import sys; print('tty', sys.stdout.isatty())\""
    out = subprocess.run(["script", "-qec", inner, "/dev/null"], env=cli_env(settings.data_dir),
                         capture_output=True, timeout=120)
    assert out.returncode == 0 and b"tty True" in out.stdout


def test_watch_answers_each_new_error_once_and_follows_rotation(kb, settings, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("old line before watching\nValueError: this old error is not news\n")
    proc = subprocess.Popen([*KB, "watch", "--json", "--interval", "0.1", "--settle", "0.3", str(log)],
                            env=cli_env(settings.data_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.0)  # the watcher has opened the file at its end
        with open(log, "a") as f:
            f.write("step 100 loss 1.2\nTraceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n")
            f.write(OOM_LINE + "\n")
        first = json.loads(proc.stdout.readline())
        assert first["file"] == str(log) and first["results"][0]["article_id"] == "cuda-oom-eval"

        with open(log, "a") as f:  # the same error again, with other numbers: not news
            f.write(OOM_LINE.replace("2.10", "3.70") + "\n")
        time.sleep(1.0)
        os.rename(log, tmp_path / "train.log.1")  # rotation: a new file under the old name
        log.write_text("Invalidate trace cache @ step 77: expected module 12, but got module 40\n")
        second = json.loads(proc.stdout.readline())
        assert second["results"][0]["article_id"] == "zero3-trace-cache"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "this old error" not in json.dumps([first, second])
