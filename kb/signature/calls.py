"""After extraction: the deepest calls of a traceback (`frame_calls`) and the launcher noise to drop (`focus`)."""

from __future__ import annotations

import re

from .mask import mask
from .model import MAX_TEXT, Signature
from .dialects import pythonize
from .prefixes import _strip_prefixes
from .vocab import _GENERIC_CALLS, _POINTS_ELSEWHERE


_FRAME_CALL = re.compile(
    r'^(?:\[rank\d+\]:)?[ \t]*File "(?P<path>[^"\n]{1,1000})", line \d{1,9}, in (?P<func>[\w<>.]{1,200})[ \t]*\n'
    r'(?:(?:\[rank\d+\]:)?[ \t]+(?P<src>[^\s\n][^\n]{0,300}))?', re.M)
MAX_CALL_FRAMES = 12
_PYSPY_FRAME = re.compile(r"^[ \t]+(?P<func>[\w<>.]{1,200}) \((?P<path>[^()\n]{1,500}\.py):\d{1,9}\)[ \t]*$", re.M)
"""A frame of `py-spy dump`, the tool people reach for when training hangs."""


def frame_calls(text: str) -> tuple[str, ...]:
    """The functions (and their source lines) of the deepest traceback frames, deepest first.

    Why: many errors share one final line (every out-of-memory error says `CUDA out of
    memory`); which call failed (`from_pretrained`, `backward`, `optimizer.step`, a
    checkpoint save) tells the causes apart. A paste cut off before its final exception
    line has only these frames to go on. Generic wrappers (`forward`, `_call_impl`) say
    nothing and are left out; each call is kept once, at its deepest place.
    """
    text = pythonize(text)  # a notebook's or rich's traceback, in Python's format
    # A hang dumped by py-spy lists its frames as `    wait (torch/utils/file_baton.py:42)`, innermost first.
    seen: dict[str, None] = {}
    if ".py:" in text:
        seen = dict.fromkeys(m.group("func") for m in _PYSPY_FRAME.finditer(text[-MAX_TEXT:])
                             if m.group("func") not in _GENERIC_CALLS)
    if 'File "' not in text:
        return tuple(seen)[:MAX_CALL_FRAMES]  # most pastes: no frame, and no line to strip prefixes from
    # Frames a logger printed (`(EngineCore_0 pid=61) ERROR 08-27 … [core.py:700]   File "…"`) are frames too, and
    # so are their source lines (` 2: [rank2]:     return f(x)`: an indented line can only lose `srun --label`'s number).
    tail = "\n".join(_strip_prefixes(line)[3] for line in text[-MAX_TEXT:].split("\n"))
    for m in reversed(list(_FRAME_CALL.finditer(tail))):
        func = m.group("func")
        parts = [] if func in _GENERIC_CALLS else [func]
        src = m.group("src")
        if src and not src.startswith(("File ", "^", "~")):
            parts.append(src.strip())
        for part in parts:
            seen.setdefault(part, None)
        if len(seen) >= MAX_CALL_FRAMES:
            break
    return tuple(seen)


# ---------------------------------------------------------------------------
# focus(): drop the launcher's noise when the paste has a real error
# ---------------------------------------------------------------------------

GENERIC_LINE = re.compile(
    r"TORCH_DISTRIBUTED_DEBUG|TORCH_SHOW_CPP_STACKTRACES|CUDA_LAUNCH_BLOCKING=1|closing signal SIG|"
    r"ChildFailedError|failed \(exitcode|^exitcode: |Root Cause \(first observed failure\)|exits with return code|"
    r"Preparing metadata|subprocess-exited-with-error|Failed (?:to build|building wheel)|"
    r"This error originates from a subprocess|Traceback \(most recent call last\)|"
    r"terminate called after throwing an instance of|Some NCCL operations have failed or timed out|"
    r"\bException \(either an error\b|EngineCore failed to start| raised:$|"
    r"^srun: (?:error: .{1,80}: tasks? [\d,-]+: (?:Exited with exit code|Terminated|Killed)|Terminating |job \d+ |"
    r"Job step aborted|forcing job termination|got SIGCONT|launch/slurm: )|^slurmstepd: error: \*\*\* (?:STEP|JOB) |"
    r"^Primary job\s+terminated normally|mpirun detected that one or more processes exited|"
    r"failed to solve: process .{1,400} did not complete successfully|executor failed running \[|^=> ERROR \[|"
    r"\bExecuteUserScriptError\b|\bUnexpectedStatusException\b|^ExitCode \d+$|^Command \".{1,400}\", exit code: \d+$|"
    + _POINTS_ELSEWHERE.pattern[4:], re.I)
"""Lines that launchers, pip and PyTorch print around many different failures: a debugging hint, a
`ChildFailedError` summary, a SIGTERM to the other ranks, pip's wheel-build epilogue, the C++ runtime's
`terminate called after throwing ...` (the `what()` under it is the error), Slurm's and Open MPI's reports that
tasks exited or were cancelled (`srun: error: node7: tasks 8-15: Exited with exit code 1`), Docker's report that a
build step failed (`ERROR: failed to solve: process "/bin/sh -c pip install …" did not complete successfully`),
SageMaker's failure reason around the script's error (`ExecuteUserScriptError:`, `ExitCode 1`), the NCCL watchdog's
epilogue after the timeout it reports, and a wrapper that points at the real error (`Engine core initialization
failed. See root cause above.`, `backend='inductor' raised:` over the error it raised)."""


def focus(sig: Signature) -> Signature:
    """The signature without its generic lines, when it has any other signal line.

    Why: a real error followed by a long tail of launcher noise (SIGTERM to the other ranks, the
    torchrun failure summary) otherwise ranks the article about that noise above the one about
    the error. A paste that holds nothing but the summary keeps it: then it is the signal.
    """
    if len(sig.lines) != len(sig.templates):
        return sig
    lines, templates = list(sig.lines), list(sig.templates)
    for i, line in enumerate(lines):
        inner = _inner_error(line)
        if inner:  # the wrapper quotes the error it wraps: that is the error
            lines[i], templates[i] = inner, mask(inner)
    keep = [i for i, line in enumerate(lines) if not GENERIC_LINE.search(line)]
    if not keep or (len(keep) == len(lines) and lines == list(sig.lines)):
        return sig
    exception = sig.exception if not GENERIC_LINE.search(sig.exception or "") else None
    if exception is None:  # a wrapper's quoted error names its type (`ImportError: …`)
        exception = next((m.group(1) for m in (_TYPED.match(lines[i]) for i in keep) if m), None)
    return Signature(exception, sig.message,
                     tuple(lines[i] for i in keep), tuple(templates[i] for i in keep), sig.components,
                     sig.prose)


_QUOTED_INNER = re.compile(r"failed with (?:error|exception):? ['\"](?P<inner>[^'\"\n]{8,400})['\"]", re.I)
"""vLLM's `Worker failed with error 'LoRA rank 32 is greater than max_lora_rank 16.', please check the
stack trace above`: a wrapper that says where the error is, and quotes it too."""
_IMPORT_WRAPPER = re.compile(
    r"Failed to import (?:from )?[\w.]{1,200} with (?P<type>[A-Za-z_]\w{0,100}(?:Error|Exception))"
    r"\((?P<q>['\"])(?P<msg>[^\n]{8,400}?)(?P=q)\)")
"""vLLM's `Failed to import from vllm._C with ImportError("/lib64/libc.so.6: version `GLIBC_2.32' not found …")`
(a WARNING, and the wrapper of whatever the import raised): the error is the one it quotes."""


_SAGEMAKER_MESSAGE = re.compile(
    r"ErrorMessage \"(?P<inner>[A-Za-z_][\w.]{0,100}(?:Error|Exception)\b[^\n]{0,600}?)\"?\s*$")
"""SageMaker's failure reason, `… AlgorithmError: ExecuteUserScriptError:` / `ExitCode 1` / `ErrorMessage "torch.cuda.
OutOfMemoryError: CUDA out of memory. …"`: the script's own error is the one it quotes."""


_TYPED = re.compile(r"([A-Za-z_][\w.]{0,100}(?:Error|Exception)): ")


def _inner_error(line: str) -> str | None:
    """The error a wrapper line quotes, as an error line of its own; None if it quotes none."""
    if GENERIC_LINE.search(line):
        m = _QUOTED_INNER.search(line)
        if m:
            return m.group("inner")
    if "Failed to import" in line:
        m = _IMPORT_WRAPPER.search(line)
        if m:
            return f"{m.group('type')}: {m.group('msg')}"
    if line.startswith("ErrorMessage "):
        m = _SAGEMAKER_MESSAGE.match(line)
        if m:
            return m.group("inner")
    return None
