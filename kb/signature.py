"""Error signatures: the few lines of a paste that identify a failure.

Users paste anything from a one-line error to a 200-line multi-rank log, often
wrapped in a Chinese question.  Retrieval works far better on the signal (the
final exception and its message, CUDA/NCCL/compiler errors, warnings, the
library components the traceback went through) than on the whole paste, and
volatile values (sizes, ranks, paths, hosts, step counts) must be masked the
same way in queries and in articles' error blocks so that both meet on one
template.  Pure stdlib ``re``; every pattern is linear-time on the capped input.
"""

from __future__ import annotations

import re
from itertools import accumulate, islice
from dataclasses import dataclass

__all__ = ["Signature", "extract", "mask", "is_error_line", "focus", "frame_calls", "GENERIC_LINE"]

MAX_LINE = 2000  # chars of one line that are analysed (and masked)
MAX_TEXT = 512 * 1024  # chars of one paste that are analysed (head + tail)
MAX_SIGNAL_LINES = 30
MAX_WARNING_LINES = 8
MAX_COMPONENTS = 8
MAX_OUT_LINE = 800  # a signal line is cut to this length
TEXT_BUDGET = 2000
MAX_PROSE = 800
_CONT_WINDOW = 16  # an exception message continues within this many lines
_FAIL_WINDOW = 120  # a torchrun failure summary (with an embedded traceback) fits in this many lines


@dataclass(frozen=True)
class Signature:
    """What a paste says about its failure, ready for retrieval."""

    exception: str | None
    message: str | None
    lines: tuple[str, ...]
    templates: tuple[str, ...]
    components: tuple[str, ...]
    prose: str

    def text(self) -> str:
        """Reduced query text: the user's words, signal lines, components (<= ~2000 chars)."""
        parts: list[str] = []
        used = 0
        if self.prose:
            p = self.prose[:600]
            parts.append(p)
            used += len(p) + 1
        for line in self.lines:
            piece = line[:400]
            if used + len(piece) + 1 > TEXT_BUDGET - 120:
                break
            parts.append(piece)
            used += len(piece) + 1
        if self.components:
            parts.append(" ".join(self.components))
        return "\n".join(parts)[:TEXT_BUDGET]


# ---------------------------------------------------------------------------
# Known libraries
# ---------------------------------------------------------------------------

# Top-level dirs that mark the package part of a path outside site-packages
# (editable installs, source trees, glog file names like torch/distributed/...).
_PATH_ROOTS = frozenset(
    """torch torchvision torchaudio deepspeed transformers accelerate peft trl vllm
    flash_attn xformers triton bitsandbytes apex megatron llamafactory swift
    lightning pytorch_lightning sglang lmdeploy colossalai fairscale diffusers
    unsloth auto_gptq awq optimum tensorrt_llm safetensors huggingface_hub
    tokenizers sentence_transformers aten c10 mmcv verl openrlhf""".split()
)
# Libraries whose logger names / exception modules count as components.
_LIBS = _PATH_ROOTS | frozenset(
    "datasets ray numpy jax tensorflow keras onnxruntime nvidia timm".split()
)
# Components that nearly every traceback passes through; they rank last.
_GENERIC_COMPONENTS = (
    "torch.nn.modules",
    "torch._tensor",
    "torch.autograd",
    "torch.utils._contextlib",
    "torch._dynamo.eval_frame",
    "torch._compile",
    "torch.utils.checkpoint",
    "accelerate.utils.operations",
    "starlette",
    "uvicorn",
    "fastapi",
    "anyio",
    "click",
    "typer",
    "fire",
    "hydra",
    "_pytest",
    "pluggy",
    "torch.multiprocessing.spawn",
    "torch.distributed.elastic",
)
# Single file names printed by C++/DeepSpeed log prefixes -> component.
_FILE_COMPONENTS = {
    "ProcessGroupNCCL.cpp": "torch.distributed",
    "ProcessGroupNCCL.hpp": "torch.distributed",
    "NCCLUtils.hpp": "torch.distributed",
    "NCCLUtils.cpp": "torch.distributed",
    "TCPStore.cpp": "torch.distributed",
    "TCPStoreLibUvBackend.cpp": "torch.distributed",
    "socket.cpp": "torch.distributed",
    "ProcessGroupGloo.cpp": "torch.distributed",
    "stage3.py": "deepspeed.runtime.zero",
    "stage_1_and_2.py": "deepspeed.runtime.zero",
    "partition_parameters.py": "deepspeed.runtime.zero",
    "parameter_offload.py": "deepspeed.runtime.zero",
    "partitioned_param_coordinator.py": "deepspeed.runtime.zero",
    "builder.py": "deepspeed.ops",
    "launch.py": "deepspeed.launcher",
    "runner.py": "deepspeed.launcher",
}
# Exceptions that only say "a child failed"; the child's own error is the signal.
_WRAPPERS = frozenset(
    {
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
        "ChildFailedError",
        "subprocess.CalledProcessError",
        "CalledProcessError",
    }
)

# ---------------------------------------------------------------------------
# mask(): volatile values -> placeholders
# ---------------------------------------------------------------------------

_A = re.ASCII
_ANSI_ESC = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)?|\x1b")
_CTRL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_WS = re.compile(r"\s+")

_URL = re.compile(
    r"(?<![\w])(?:https?|ftp|file|s3|gs|hf|wss?)://"
    r"[^\s<>()\[\]'\"`]*[^\s<>()\[\]'\"`.,;:!?]",
    _A,
)
# Path: lookbehinds sit after the first literal so the scan can skip ahead fast.
_PC = r"[^\s:'\"`,;()\[\]{}<>|=*?]"
_NOT_BEFORE_PATH = r"[\w.~/\\>:-]"
_PATH = re.compile(
    r"/(?<!" + _NOT_BEFORE_PATH + r"/)" + _PC + r"+"
    r"|~/(?<!" + _NOT_BEFORE_PATH + r"~/)" + _PC + r"*"
    r"|\./(?<!" + _NOT_BEFORE_PATH + r"\./)" + _PC + r"*"
    r"|\.\./(?<!" + _NOT_BEFORE_PATH + r"\.\./)" + _PC + r"*",
    _A,
)
_WINPATH = re.compile(r"[A-Za-z]:\\(?<![\w>][A-Za-z]:\\)" + _PC + r"+", _A)
_HEXD = r"[0-9a-fA-F]"
_UUID = re.compile(
    _HEXD + r"(?<![\w>-]" + _HEXD + r")" + _HEXD + r"{7}-" + _HEXD + r"{4}-" + _HEXD + r"{4}-"
    + _HEXD + r"{4}-" + _HEXD + r"{12}(?![\w-])",
    _A,
)
_TS_GLOG = re.compile(r"[IWEF](?<![\w.:>-][IWEF])\d{4} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?![\w:])", _A)
_IP6_BR = re.compile(
    r"\[(?<![\w:.>]\[)" + _HEXD + r"{0,4}:" + _HEXD + r"{0,4}:[0-9a-fA-F:]{0,35}\](?::(\d{1,5}))?(?![\w])", _A
)
_IP6 = re.compile(
    r"(?<![\w:.])(?:(?:" + _HEXD + r"{1,4}:){7}" + _HEXD + r"{1,4}"
    r"|(?:" + _HEXD + r"{1,4}(?::" + _HEXD + r"{1,4}){0,6})?::" + _HEXD + r"{1,4}(?::" + _HEXD + r"{1,4}){0,6})"
    r"(?![\w:])",
    _A,
)
_FQDN = re.compile(
    r"[A-Za-z0-9](?<![\w.>-][A-Za-z0-9])[A-Za-z0-9-]{0,62}(?:\.[A-Za-z0-9-]{1,63}){0,6}"
    r"\.(?:local|internal|lan|localdomain|cluster|corp|intra)(?![\w.-])",
    _A,
)
# Cluster-style short names (node-17, gpu-a100-03, worker-0, ip-10-0-0-12): any
# dash-digit word is a candidate, the callback keeps only host-like first labels.
_DASHNAME = re.compile(
    r"[A-Za-z](?<![\w.>-][A-Za-z])[A-Za-z0-9]{0,30}(?:-[A-Za-z0-9]{1,30}){0,6}-\d{1,6}(?![\w.-])", _A
)
_HOST_LABELS = (
    "node", "gpu", "worker", "host", "ip", "dgx", "compute", "cn", "gn", "master", "server", "instance", "pod",
    "job", "trainer", "machine", "vm", "hpc", "a100", "h100", "h800", "a800", "h20", "v100", "l40", "ecs", "slurm",
)
_HOSTFIELD = re.compile(r"((?:host|hostname): |host=)[A-Za-z][\w.-]*", _A)
_HEX0X = re.compile(r"0[xX](?<![\w>]0[xX])[0-9a-fA-F]+(?![\w])", _A)
_HEX_MARK = bytes(ord("h") if chr(i) in "0123456789abcdef" else 32 for i in range(256))
_DASH_DIGIT = re.compile(r"-\d")
_HEXLONG = re.compile(r"[0-9a-f](?<![\w>-][0-9a-f])[0-9a-f]{11,}(?![\w-])", _A)
_SHAPE_TS = re.compile(r"torch\.Size\(\[[\d ,-]{0,256}\]\)", _A)
_SHAPE_LIST = re.compile(
    r"\[(?<![\w\]]\[) ?-?\d+(?: ?, ?-?\d+)+ ?,? ?\]"
    r"|\((?<![\w)]\() ?-?\d+(?: ?, ?-?\d+)+ ?,? ?\)"
    r"|\((?<![\w)]\() ?-?\d+ ?, ?\)",
    _A,
)
_VER_V = re.compile(
    r"v(?<![\w.>-]v)\d+(?:\.\d+)+(?:\.?(?:post|dev|rc|a|b)\d*)?(?:\+[A-Za-z0-9_.]*[A-Za-z0-9_])?(?![\w.])", _A
)
_RANK = re.compile(r"([rR](?<![A-Za-z][rR])[aA][nN][kK])\d+(?![\w])", _A)  # rank3, [rank3]
# Every token that starts with a digit (dates, times, IPv4, versions, NxM shapes, sizes, durations,
# plain numbers) in one scan; the callback names the placeholder.
_NUMTOK = re.compile(
    r"-(?<![\w.>-]-)(?P<neg>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w])(?!\.\d)"
    r"|\d(?<![\w.>-]\d)(?:"
    r"(?P<ts>(?:\d{3}[-/]\d{2}[-/]\d{2}(?:[T _]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d/\d{2}/\d{4}(?: \d{2}:\d{2}:\d{2}(?:[.,]\d+)?)?"
    r"|\d-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
    r"|\d?:\d{2}:\d{2}(?:[.,]\d+)?)(?![\w:]))"
    r"|(?P<ip>\d{0,2}(?:\.\d{1,3}){3})(?::(?P<port>\d{1,5}))?(?![\w])(?!\.\d)"
    r"|(?P<ver>\d*(?:\.\d+){2,}(?:\.?(?:post|dev|rc|a|b)\d*)?(?:\+[A-Za-z0-9_.]*[A-Za-z0-9_])?)(?![\w])"
    r"|(?P<shape>\d*(?:x\d+)+)(?![\w])"
    r"|(?P<size>\d*(?:\.\d+)? ?(?:[KMGTP]iB|[kKMGTP]B|bytes?))(?![\w])"
    r"|(?P<dur>\d*(?:\.\d+)?(?: ?(?:milliseconds?|microseconds?|nanoseconds?|seconds?|secs?"
    r"|minutes?|mins?|hours?|hrs?)|(?:ms|us|ns|s|h)))(?![\w])"
    r"|(?P<num>\d*(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w])(?!\.\d)"
    r")",
    _A,
)
_NUMTOK_FIXED = {"ts": "<TS>", "ip": "<IP>", "port": "<IP>:<PORT>", "ver": "<VER>", "shape": "<SHAPE>",
                 "size": "<SIZE>", "dur": "<DUR>"}
# Numbers kept as they are: exit codes and signal numbers name the failure (-9 OOM killer, 1 Python error).
_KEEP_PRE = ("exitcode: ", "exitcode : ", "exitcode=", "exit status ", "exit code ", "exit code: ", "with code ",
             "Signal ", "signal ", "signal: ")
_SEP_FORMS = (" ", ":", ": ", " :", " : ", "=", "= ", " =", " = ")
_RANK_PRE = tuple("rank" + f for f in _SEP_FORMS)
_PID_PRE = tuple("pid" + f for f in _SEP_FORMS) + ("process ",)
_VEREQ_PRE = ("==", ">=", "<=", "~=", "!=")
_CONTEXT_ENDS = frozenset(p[-1] for p in _KEEP_PRE + _RANK_PRE + _PID_PRE + _VEREQ_PRE)


def _numtok_repl(m: re.Match[str]) -> str:
    g = m.lastgroup
    fixed = _NUMTOK_FIXED.get(g)  # type: ignore[arg-type]
    if fixed is not None:
        return fixed
    start = m.start()
    pre = m.string[max(0, start - 12) : start]
    if pre[-1:] not in _CONTEXT_ENDS:
        return "<N>"  # every context below ends in one of these
    if pre.endswith(_KEEP_PRE):
        return m.group(0)
    if g == "num":
        if pre.endswith(_VEREQ_PRE):
            return "<VER>"
        lp = pre.lower()
        for suffixes, out in ((_RANK_PRE, "<RANK>"), (_PID_PRE, "<PID>")):
            if lp.endswith(suffixes):
                for suf in suffixes:
                    if lp.endswith(suf):
                        before = lp[: len(lp) - len(suf)][-1:]
                        if not before.isalpha():
                            return out
                        break
    return "<N>"


_DIGIT = re.compile(r"[0-9]")
_SRC_EXT = (".py", ".pyx", ".pyi", ".so", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".cc", ".c")


def _pkg_part(path: str) -> str | None:
    """Package-relative part of a path ('deepspeed/runtime/engine.py'), or None.

    Why: the package part is stable across machines and names the library;
    the prefix (/home/alice/venv/lib/python3.10/...) is not.
    """
    q = path.replace("\\", "/")
    i = q.rfind("-packages/")
    if i >= 4 and q[i - 4 : i] in ("site", "dist"):
        rest = q[i + 10 :].lstrip("/")
        return rest or None
    if not q.endswith(_SRC_EXT) and ".so." not in q:
        return None
    segs = q.split("/")
    for j in range(len(segs) - 1):
        if segs[j] in _PATH_ROOTS:
            while j + 2 < len(segs) and segs[j + 1] == segs[j]:
                j += 1  # repo dir named like its package: vllm/vllm/engine/...
            return "/".join(segs[j:])
    return None


def _path_repl(m: re.Match[str]) -> str:
    return _pkg_part(m.group(0)) or "<PATH>"


def _ip_repl(m: re.Match[str]) -> str:
    return "<IP>:<PORT>" if m.group(1) else "<IP>"


def _dashname_repl(m: re.Match[str]) -> str:
    word = m.group(0)
    first = word.split("-", 1)[0].lower()
    return "<HOST>" if first.startswith(_HOST_LABELS) else word


def _hexlong_repl(m: re.Match[str]) -> str:
    w = m.group(0)
    return "<HEX>" if (not w.isdigit() and _DIGIT.search(w)) else w


def _mask_once(s: str) -> str:
    """One pass of every rule, each gated by a cheap substring test."""
    if "://" in s:
        s = _URL.sub("<URL>", s)
    if "/" in s:
        s = _PATH.sub(_path_repl, s)
    if ":\\" in s:
        s = _WINPATH.sub(_path_repl, s)
    digit = _DIGIT.search(s) is not None
    if digit:
        if s.count("-") >= 4:
            s = _UUID.sub("<UUID>", s)
        if s.count(":") >= 2 and ("I" in s or "W" in s or "E" in s or "F" in s):
            s = _TS_GLOG.sub("<TS>", s)
    if ":" in s:
        if "[" in s:
            s = _IP6_BR.sub(_ip_repl, s)
        if "::" in s or s.count(":") >= 7:
            s = _IP6.sub("<IP>", s)
    if "." in s and (
        ".local" in s or ".internal" in s or ".lan" in s or ".cluster" in s or ".corp" in s or ".intra" in s
    ):
        s = _FQDN.sub("<HOST>", s)
    if digit and "-" in s and _DASH_DIGIT.search(s):
        s = _DASHNAME.sub(_dashname_repl, s)
    if "host" in s:
        s = _HOSTFIELD.sub(r"\1<HOST>", s)
    if not digit:
        return s
    if "0x" in s or "0X" in s:
        s = _HEX0X.sub("<HEX>", s)
    if b"hhhhhhhhhhhh" in s.encode("utf-8", "surrogatepass").translate(_HEX_MARK):
        s = _HEXLONG.sub(_hexlong_repl, s)
    if "torch.Size" in s:
        s = _SHAPE_TS.sub("<SHAPE>", s)
    if "," in s and ("[" in s or "(" in s):
        s = _SHAPE_LIST.sub("<SHAPE>", s)
    if "v" in s and "." in s:
        s = _VER_V.sub("<VER>", s)
    if "ank" in s or "ANK" in s:
        s = _RANK.sub(r"\1<RANK>", s)
    return _NUMTOK.sub(_numtok_repl, s)


def _normalize(line: str) -> str:
    """Strip terminal colour codes and control chars, collapse whitespace."""
    if not line.isprintable():
        if "\x1b" in line:
            line = _ANSI_ESC.sub("", line)
        line = _CTRL.sub("", line)
    return " ".join(line.split())


def mask(line: str) -> str:
    """Replace volatile values with placeholders; idempotent.

    Why: a paste and an article's error block describe the same failure with
    different numbers, paths, ranks and hosts; both are masked the same way so
    they meet on one template.  Applied until a fixed point (normally one
    extra pass), which makes ``mask(mask(x)) == mask(x)`` hold by construction.
    """
    if not isinstance(line, str):
        line = str(line)
    s = _normalize(line[: MAX_LINE * 4])
    if len(s) > MAX_LINE:
        s = s[:MAX_LINE].rstrip()
    for _ in range(4):
        out = _mask_once(s)
        if len(out) > MAX_LINE:
            out = out[:MAX_LINE].rstrip()
        if out == s:
            break
        s = out
    return s


# ---------------------------------------------------------------------------
# Line cleaning: log prefixes, ranks, timestamps
# ---------------------------------------------------------------------------

_LVL = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
# Each log-prefix shape as one named branch; groups "<name>_l" = level, "_f" = file, "_g" = logger.
_PFX_BRANCHES: dict[str, str] = {
    "rank": r"\[(?:rank|default)(?P<rank_n>\d{1,5})\]: ?",
    "pid": r"\((?:[A-Za-z_][\w.]{0,60} )?pid=(?P<pid_n>\d{1,9})(?:, ip=[^)\s]{0,64})?\) ?",
    "glogb": r"\[(?P<glogb_l>[IWEF])(?:\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?)? (?:\d+ )?(?P<glogb_f>[\w./-]{1,200}):\d+\] ?",
    "glog": r"(?P<glog_l>[IWEF])\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)? +\d+ (?P<glog_f>[\w./-]{1,200}):\d+\] ?",
    "vllm": r"(?P<vllm_l>" + _LVL + r") \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? \[?(?P<vllm_f>[\w./-]{1,200}):\d+\] ?",
    "hfb": r"\[(?P<hfb_l>" + _LVL + r")\|(?:(?P<hfb_f>[\w./-]{1,200}):\d+\] +"
    r"(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[,.]\d+)? *>> *)?"
    r"|\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[,.]\d+)?\] +(?P<hfb_g>[\w.]{1,200})(?::\d+)? *>> *)",
    "dslvl": r"\[(?P<dslvl_l>" + _LVL + r")\] *(?:\[(?P<dslvl_f>[\w.-]{1,200}):\d+:\w+\] *)?",
    "pylog": r"(?P<pylog_l>" + _LVL + r"):(?P<pylog_g>[A-Za-z_][\w.]{0,200}):",
    "uvi": r"(?P<uvi_l>" + _LVL + r"):  +",
    "tsb": r"\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d+)?\] *(?:(?P<tsb_g>[A-Za-z_][\w.]{0,200}): (?=\[))?",
    "ts": r"(?:\d{4}-\d{2}-\d{2}[ T_]|\d{2}/\d{2}/\d{4} )\d{2}:\d{2}:\d{2}(?:[,.]\d+)?(?:Z|[+-]\d{2}:?\d{2})? *(?:[-|:] *)?",
    "nccl": r"[\w.-]{1,100}:\d+:\d+ \[\d+\] (?:[\w./-]{1,200}:\d+ )?(?=NCCL )",
    "lvl": r"(?P<lvl_l>" + _LVL + r") *[-|:] +",
    "lvlb": r"\[(?P<lvlb_l>" + _LVL + r")\] *",
    "logger": r"(?P<logger_g>[A-Za-z_][\w.]{0,200}(?::[\w<>]{1,100}:\d+)?) +- +",
    "pdsh": r"(?P<pdsh_h>[A-Za-z][A-Za-z0-9]{0,30}(?:-[A-Za-z0-9]{1,30}){0,6}-?\d{1,6}|\d{1,3}(?:\.\d{1,3}){3}): (?=.)",
    "srun": r"(?P<srun_n>\d{1,4}): (?=.)",
    "quote": r"> (?=\S)",
}


def _pfx_regex(names: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?P<{n}>{_PFX_BRANCHES[n]})" for n in names), _A)


def _by_char(bracket: list[str], letter: list[str], digit: list[str], extra: dict[str, list[str]]) -> dict[str, re.Pattern[str]]:
    """First character -> regex of only the prefix shapes that can start with it."""
    table: dict[str, re.Pattern[str]] = {}
    if bracket:
        table["["] = _pfx_regex(bracket)
    if letter:
        rx = _pfx_regex(letter)
        table.update((c, rx) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
    if digit:
        rx = _pfx_regex(digit)
        table.update((c, rx) for c in "0123456789")
    for c, names in extra.items():
        table[c] = _pfx_regex(names)
    return table


_BRACKETS = ["rank", "glogb", "hfb", "dslvl", "tsb"]
_PFX_FIRST = _by_char(_BRACKETS, ["glog", "vllm", "pylog", "uvi", "pdsh"], ["ts", "pdsh", "srun"],
                      {"(": ["pid"], ">": ["quote"]})
_PFX_NEXT = _by_char(_BRACKETS, ["glog", "vllm", "pylog", "uvi"], ["ts"], {"(": ["pid"]})
_PFX_CTX = _by_char(_BRACKETS + ["lvlb"], ["lvl"], [], {})
_PFX_CTX_LOGGER = _by_char(_BRACKETS + ["lvlb"], ["lvl", "logger"], [], {})
_PFX_NCCL = _pfx_regex(["nccl"])
_CTX_SET = frozenset({"ts", "tsb", "lvl", "lvlb", "logger", "glogb", "glog", "vllm", "hfb", "dslvl", "pylog", "uvi"})
_PFX_META = {
    n: (n + "_l" if f"?P<{n}_l>" in p else None, tuple(n + s for s in ("_f", "_g") if f"?P<{n}{s}>" in p))
    for n, p in _PFX_BRANCHES.items()
}
_ANSI_LOOSE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)?|\x1b|\[(?:\d{1,3};)*\d{1,3}m")
_LEVEL_NORM = {"WARN": "WARNING", "FATAL": "CRITICAL", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}


def _strip_prefixes(line: str) -> tuple[str, str | None, str | None, str]:
    """Remove log prefixes; return (stream key, level, component hint, rest).

    Why: '[rank3]:[W1122 ...] ' and '2024-.. - INFO - x - ' vary per line and
    per rank; the stream key lets interleaved ranks be parsed separately.
    """
    key = ""
    level: str | None = None
    comp: str | None = None
    table = _PFX_FIRST
    pos = 0
    n = len(line)
    nccl = "NCCL " in line
    for _ in range(6):
        if pos >= n:
            break
        rx = table.get(line[pos])
        m = rx.match(line, pos) if rx is not None else None
        if m is None and nccl:
            m = _PFX_NCCL.match(line, pos)
        if m is None or m.end() == pos:
            break
        g = m.lastgroup
        if g == "rank":
            key += "r" + m.group("rank_n")
        elif g == "pid":
            key += "p" + m.group("pid_n")
        elif g == "pdsh":
            key += "h" + m.group("pdsh_h")
        elif g == "srun":
            key += "s" + m.group("srun_n")
        elif g != "quote" and g != "nccl":
            lvg, compgs = _PFX_META[g]  # type: ignore[index]
            if lvg:
                lv = m.group(lvg)
                level = _LEVEL_NORM.get(lv, lv)
            for cg in compgs:
                name = m.group(cg)
                if name:
                    comp = _hint_component(g, name) or comp  # type: ignore[arg-type]
        if g in _CTX_SET:
            table = _PFX_CTX_LOGGER if " - " in line else _PFX_CTX
        else:
            table = _PFX_NEXT
        pos = m.end()
    return key, level, comp, line[pos:]


def _hint_component(kind: str, name: str) -> str | None:
    """Component named by a log prefix (logger name or source file); cached, names repeat on every line."""
    k = (kind, name)
    try:
        return _HINT_CACHE[k]
    except KeyError:
        pass
    if len(_HINT_CACHE) > 4096:
        _HINT_CACHE.clear()
    out = _HINT_CACHE[k] = _hint_component_uncached(kind, name)
    return out


_HINT_CACHE: dict[tuple[str, str], str | None] = {}


def _hint_component_uncached(kind: str, name: str) -> str | None:
    if "/" in name:
        part = _pkg_part(name)
        return _component(part) if part else None
    if name in _FILE_COMPONENTS:
        return _FILE_COMPONENTS[name]
    if kind == "vllm":
        return "vllm"
    if kind == "hfb" and name.endswith(".py"):
        return "transformers." + name[:-3]
    if kind == "dslvl":
        return "deepspeed"
    if "." in name and not name.endswith((".py", ".cpp", ".cc", ".hpp", ".h")):
        head = name.split(".", 1)[0]
        if head in _LIBS:
            return ".".join(name.split(".")[:3])
    return None


def _component(pkg_path: str) -> str | None:
    """'deepspeed/runtime/zero/stage3.py' -> 'deepspeed.runtime.zero' (at most 3 levels)."""
    parts = [p for p in pkg_path.split("/") if p]
    if not parts:
        return None
    if parts[0].endswith((".egg", ".egg-info")) and len(parts) > 1:
        parts = parts[1:]
    stem = parts[-1].split(".", 1)[0]
    mods = parts[:-1] + ([stem] if stem and stem != "__init__" else [])
    out: list[str] = []
    for p in mods[:3]:
        if not p.isidentifier():
            break
        out.append(p)
    return ".".join(out) if out else None


# ---------------------------------------------------------------------------
# Line classification
# ---------------------------------------------------------------------------

_FRAME = re.compile(r'File "(?P<path>[^"]{1,1000})", line \d+(?:, in .*)?$')
_RANK_PREFIX = re.compile(r"\[(?:rank|default)\d{1,5}\]: ")
_TB_RUNS: dict[tuple[str, int], tuple[re.Pattern[str], re.Pattern[str]]] = {}


def _tb_run_regexes(prefix: str, indent: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(whole run, frame paths) for the lines of one traceback stream after a frame at `indent`.

    A run is frame lines at that indent and lines indented deeper (source
    code, ^^^^ markers), each behind the stream's own prefix; anything else
    (a blank line, the exception, another rank's line) ends it.
    """
    key = (prefix, indent)
    rxs = _TB_RUNS.get(key)
    if rxs is None:
        if len(_TB_RUNS) > 256:
            _TB_RUNS.clear()
        p = re.escape(prefix)
        frame = p + " {%d}" % indent + r'File "([^"\n]{1,1000})", line \d{1,20}(?:, in [^\n]*)?\n'
        deeper = p + " {%d,1000}" % (indent + 1) + r'(?!File ")\S[^\n]*\n'
        rxs = _TB_RUNS[key] = (re.compile(f"(?:{frame}|{deeper})*"), re.compile("^" + frame, re.M))
    return rxs


_EXC_TB = re.compile(r"(?P<type>(?:[A-Za-z_]\w{0,100}\.){0,12}[A-Za-z_]\w{0,100})(?::(?:[ \t]*)(?P<msg>.*))?$")
_EXC_FREE = re.compile(  # a bare `Exception: msg` too: `raise Exception(...)` is common in user code
    r"(?P<type>(?:[A-Za-z_]\w{0,100}\.){0,12}(?:[A-Za-z_]\w{0,100}"
    r"(?:Error|Exception|Exit|Interrupt|Failure|Fault)|Exception(?=:[ \t]*\S)))(?::[ \t]*(?P<msg>.*))?$"
)
_EXC_INLINE = re.compile(
    r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w{0,100}\.){0,12}[A-Za-z_]\w{0,100}(?:Error|Exception)): "
)
_WARN_LOC = re.compile(r"(?P<loc>.{1,1000}?):(?P<ln>\d+): (?P<type>[A-Za-z_][\w.]{0,100}Warning): (?P<msg>.*)$")
_WARN_FREE = re.compile(r"(?P<type>(?:[A-Za-z_]\w{0,100}\.){0,6}[A-Za-z_]\w{0,100}Warning)(?::[ \t]*(?P<msg>.*))?$")
_TB_SUFFIX = ("Error", "Exception", "Exit", "Interrupt", "Iteration", "Warning", "Failure", "Fault", "Timeout")
_STRUCTURE = (
    "Traceback (most recent call last)",
    "Exception ignored in",
    "During handling of the above exception, another exception occurred",
    "The above exception was the direct cause of the following exception",
)
_FAIL_FIELD = re.compile(r"(?P<k>time|host|rank|exitcode|error_file|traceback|local_rank) *: ?(?P<v>.*)$")
_TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<t>[^']{1,200})'")
_WHAT = re.compile(r"what\(\): *(?P<m>.*)$")
_COMPILER_LOC = re.compile(r"(?:[^\s:]{1,500}):\d+(?::\d+)?: (?=(?:fatal )?error\b|error:|warning:|note:|undefined reference)")
_NCCL_AT = re.compile(r"NCCL (?:WARN|INFO|ERROR)\b")
_SEPARATOR = re.compile(r"[=\-*_#~+.\s|:<>]{4,}$|[=\-*#]{3,}[ \w]{1,40}[=\-*#]{3,}$")
_PROGRESS = re.compile(r"\d{1,3}%\||\|\s*\d+/\d+\s*\[\d|[\u2500-\u259f]{3,}")
_KV = re.compile(r"(?:[\w.\-\[\]]{1,100}=[^\s,=]{0,200}[, ]*){2,}$|[\w.\-\[\]]{1,100}=[^\s=]{0,200},?$")
_PIPROW = re.compile(r"[\w.\-\[\]]{1,100} +v?\d[\w.+!-]{0,40}\.[\w.+!-]{0,40}(?: +\S{1,60}){0,2}$")
_BP_PREFIX = (
    "hint: ", "Exception raised from ", "frame #", "Traceback (most recent call last)", "[Previous line repeated",
    "Failures:", "Root Cause (first observed failure):", "<NO_OTHER_FAILURES>",
)
_BP_SUBSTR = (
    "CUDA kernel errors might be asynchronously reported", "For debugging consider passing CUDA_LAUNCH_BLOCKING",
    "TORCH_USE_CUDA_DSA` to enable", "To enable traceback see", "Setting OMP_NUM_THREADS environment variable",
    "This error originates from a subprocess", "This is an issue with the package mentioned above",
    "See above for output", "See above for details", "Please run the following command to get more information",
    "Welcome to bitsandbytes", "not a git repository", "submit this information together with your error trace",
)
# Keyword gate: substrings that any signal line contains (lowercased), then whole tokens, then phrases.
_KW_WORDS = frozenset(
    w.encode()
    for w in """terminate terminated terminating undefined cannot unable unsupported invalid illegal segfault
    segmentation dumped oom timeout timeouts timed expected mismatch mismatched incompatible denied refused signal
    sigkill sigsegv sigabrt sigbus sigterm deprecated deprecation nan inf hang hangs hanging stuck deadlock problem
    corrupt corrupted overflow exitcode""".split()
)
_GENERIC_WORDS = frozenset(
    w.encode()
    for w in """error errors failed failure fatal abort aborted aborting timeout cannot invalid illegal incompatible
    unsupported denied deadlock hang hangs hanging stuck""".split()
)
_WARN_WORDS = frozenset(w.encode() for w in "warn warning warnings deprecated".split())
_STRONG_PHRASES = (
    "out of memory", "no module named", "no such file or directory", "unsupported gpu architecture",
    "compiled without gpu support", "cuda setup failed", "required library version not found", "not found",
    "not detected", "not available", "not supported", "address already in use", "connection refused",
    "permission denied", "mismatch",
)
_PIP_GENERIC = (
    "error: subprocess-exited-with-error", "error: failed building", "error: could not build", "error: failed to build",
    "error: command",
)
_PUNCT = b"!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~"
_TOK_TABLE = bytes.maketrans(_PUNCT, b" " * len(_PUNCT))
_NCCL_ERR = re.compile(r"nccl[A-Z]\w*Error")
_SIGNAL_N = re.compile(r"[Ss]ignal \d+ \(SIG")
_HUMAN = re.compile(
    r"\b(?:I|I'm|I've|my|we|our|me|help|please|anyone|how|why|what|does|is there|any idea|thanks|hi|hello"
    r"|getting|get this|here is|here's|below)\b",
    re.I,
)
_LOG_VERBS = re.compile(
    r"(?:Loading|Using|Building|Emitting|Detected|Setting|Initializ|Installing|Collecting|Downloading"
    r"|Running|Creating|Processing|Successfully|Requirement already|Attempting|Found|Saving|Time to load"
    r"|Allowing ninja|Preparing|Uninstalling|Starting|Started|Waiting|Applying|Launching|Map|Tokeniz"
    r"|Generating|Converting|Resolving|Stored in|Obtaining|Looking in|Checking)\b"
)
_PROSE_EN = re.compile(r"[A-Za-z][\w ,'\u2019?!.:;()/\"`-]*$")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_ASCII_SEG = re.compile(r"[\x20-\x7e]{12,}")
_WORD = re.compile(r"[A-Za-z]{2,}")
_CARET = re.compile(r"[\^~ ]+$")
# A log message as tools print it: a capitalised word, then at least two more words ("Loading extension module x...").
_TAIL_OK = re.compile(r"[A-Z][A-Za-z]+ [^ ]+ [^ ]+", _A)
_MAX_CLASSIFY = 600


def _tokens(low: str) -> list[bytes]:
    """Word tokens of a lowercased line (identifiers with '_' stay whole); bytes.translate is the fast path."""
    return low.encode("utf-8", "surrogatepass").translate(_TOK_TABLE).split()


def _is_boilerplate(body: str) -> bool:
    """Hint lines every such error prints; they say nothing about this failure."""
    if body.startswith(_BP_PREFIX):
        return True
    for p in _BP_SUBSTR:
        if p in body:
            return True
    return False


def _is_noise(body: str) -> bool:
    """Separators, progress bars and environment dumps (pip list, ds_report, key=value, nvidia-smi)."""
    if _SEPARATOR.match(body):
        return True
    if ("%|" in body or "it/s" in body or "s/it" in body or not body.isascii()) and _PROGRESS.search(body):
        return True
    c = body[0]
    if c in "|+\u2502\u2570\u256d\u251c" or body.startswith(("[pip", "[conda]")) or "......" in body:
        return True
    if "=" in body and _KV.match(body):
        return True
    return _PIPROW.match(body) is not None


def _kw_hit(low: str) -> bool:
    """Cheap gate: could this lowercased line be a signal at all?"""
    if (
        "err" in low
        or "fail" in low
        or "warn" in low
        or "exception" in low
        or "fatal" in low
        or "kill" in low
        or "abort" in low
        or "assert" in low
        or "exit" in low
        or "interrupt" in low
        or "\u00d7" in low
    ):
        return True
    if not _KW_WORDS.isdisjoint(_tokens(low)):
        return True
    if "not " in low or "no " in low or "n't" in low or "non-" in low:
        return "not found" in low or "no such" in low or "no module" in low or "can't" in low or (
            "could not" in low or "not supported" in low or "not available" in low or "not detected" in low
            or "did not" in low or "non-zero" in low
        )
    return (
        "what():" in low
        or "out of memory" in low
        or "in use" in low
        or "exit status" in low
        or "exit code" in low
        or "_status_" in low
        or "but got" in low
    )


def _classify(body: str, level: str | None, kw: bool | None = None) -> tuple[int, int] | None:
    """(category, sub-priority) of a free-standing line, or None for noise.

    Categories: 3 = specific error (compiler, CUDA, NCCL, signals), 4 = generic
    error, 5 = warning.  Lower sub-priority ranks first.
    """
    if level == "INFO" or level == "DEBUG":
        return None  # benign INFO lines mention "error"/"not found" all the time
    if len(body) > _MAX_CLASSIFY:
        body = body[:_MAX_CLASSIFY]
    low = body.lower()
    if kw is None:
        kw = _kw_hit(low)
    if not kw and level is None:
        return None
    if _is_boilerplate(body) or _is_noise(body):
        return None
    if kw:
        cls = _signal_class(body, low)
        if cls is not None:
            if level == "WARNING" and (cls[0] == 5 or cls[1] >= 5):
                return (5, 1)
            return cls
    if level == "ERROR" or level == "CRITICAL":
        return (4, 6)
    if level == "WARNING":
        return (5, 1)
    return None


def _signal_class(body: str, low: str) -> tuple[int, int] | None:
    if "fatal error" in low or low.startswith(("nvcc fatal", "fatal:")):
        return (3, 0)
    if "undefined symbol" in low or "undefined reference" in low or "cannot find -l" in low or (
        "cannot open shared object file" in low
    ):
        return (3, 0)
    if (
        "cuda error" in low
        or "cublas_status_" in low
        or "cudnn_status_" in low
        or "cudaerror" in low
        or "device-side assert" in low
        or "illegal memory access" in low
        or low.startswith("what():")
        or ("assertion" in low and "failed" in low)
    ):
        return (3, 0)
    if "nccl" in low and ("nccl warn" in low or "nccl error" in low or _NCCL_ERR.search(body)):
        return (3, 0)
    if "watchdog caught" in low or "collective operation timeout" in low:
        return (3, 0)
    if (
        "segmentation fault" in low
        or "bus error" in low
        or "core dumped" in low
        or "fatal python error" in low
        or low == "killed"
        or "killed by signal" in low
        or "received signal" in low
        or ("signal" in low and _SIGNAL_N.search(body))
    ):
        return (3, 1)
    toks = _tokens(low)
    if any(p in low for p in _STRONG_PHRASES) or b"oom" in toks or (
        "expected" in low and ("but got" in low or "but found" in low or "but received" in low)
    ):
        return (3, 2)
    if low.startswith("error:") and not low.startswith(_PIP_GENERIC):
        return (3, 3)
    if (
        "failed building wheel for" in low
        or "failed to build" in low
        or "ninja: build stopped" in low
        or body.startswith("FAILED: ")
        or (low.startswith("error: command") and "failed" in low)
        or "terminate called after throwing" in low
        or "non-zero exit status" in low
        or "exitcode" in low
        or "exit code" in low
        or "exit status" in low
    ):
        return (4, 0)
    if (
        "did not run successfully" in low
        or "subprocess-exited-with-error" in low
        or "could not build wheels" in low
        or body.startswith("\u00d7 ")
    ):
        return (4, 2)
    if not _GENERIC_WORDS.isdisjoint(toks) or "timed out" in low or "can't" in low or "could not" in low or (
        "unable to" in low
    ):
        return (4, 5)
    if b"nan" in toks or b"inf" in toks:
        return (4, 8)
    if not _WARN_WORDS.isdisjoint(toks):
        return (5, 0)
    return None


def is_error_line(line: str) -> bool:
    """True if a line looks like an error/warning signal (not a frame, progress bar or env dump).

    Why: shared by query extraction and by article error blocks so both pick
    the same kind of lines.
    """
    if not isinstance(line, str):
        line = str(line)
    s = _normalize(_clean_loose(line[:MAX_LINE]))
    if not s:
        return False
    _, level, _, body = _strip_prefixes(s)
    body = body.strip()
    if not body or body.startswith('File "'):
        return False
    if body.startswith(_STRUCTURE):
        return False  # traceback scaffolding: structure, not signal
    if body[0].isalpha() or body[0] == "_":
        if _EXC_FREE.match(body) or _WARN_FREE.match(body):
            return True
    if "Warning: " in body and _WARN_LOC.match(body):
        return True
    return _classify(body, level) is not None


def _clean_loose(s: str) -> str:
    if "\x1b" in s or "m" in s and "[" in s:
        s = _ANSI_LOOSE.sub("", s)
    return s


# ---------------------------------------------------------------------------
# extract()
# ---------------------------------------------------------------------------


class _Exc:
    __slots__ = ("pos", "stream", "type", "message", "chain", "frames", "details", "join_next", "cpp", "ignored")

    def __init__(self, pos: int, stream: str, etype: str, message: str, chain: int, frames: list[str], cpp: bool = False):
        self.pos = pos
        self.stream = stream
        self.type = etype
        self.message = message
        self.chain = chain
        self.frames = frames
        self.details: list[str] = []
        self.join_next = False
        self.cpp = cpp
        self.ignored = False

    def line(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


class _Stream:
    __slots__ = ("in_tb", "after_frame", "frame_indent", "frames", "chain", "chain_next", "cont", "cont_n", "cont_pos",
                 "skip_code", "fail", "fail_pos", "cpp_type", "ignored")

    def __init__(self) -> None:
        self.in_tb = False
        self.after_frame = False
        self.frame_indent = 0
        self.frames: list[str] = []
        self.chain = -1
        self.chain_next = False
        self.cont: _Exc | None = None
        self.cont_n = 0
        self.cont_pos = 0
        self.skip_code = False
        self.fail: str | None = None
        self.fail_pos = 0
        self.cpp_type: str | None = None
        self.ignored = False


class _Extractor:
    """One pass over the lines of a paste, keeping per-stream traceback state."""

    def __init__(self) -> None:
        self.streams: dict[str, _Stream] = {}
        self.excs: list[_Exc] = []
        self.signals: list[tuple[int, int, int, str]] = []  # (cat, sub, pos, line)
        self.warn_excs: list[tuple[int, str, str]] = []  # (pos, type, msg)
        self.comp_scores: dict[str, float] = {}
        self.comp_last: dict[str, int] = {}
        self.orphan_frames: list[tuple[int, list[str]]] = []
        self.hints: dict[str, float] = {}
        self.active: dict[str, int] = {}  # stream key -> line up to which it is mid-structure
        self.lines: list[str] = []  # the paste's lines: its last ones say where a hang stopped
        self.busy_until = -1
        self.main_busy_until = -1
        self.odd_busy = False
        self.odd_active = 0  # active keys whose lines can't be told apart cheaply (see feed)
        self.cur_key = ""
        self.cur_st: _Stream | None = None
        self.cur_pos = 0
        self.frame_cache: dict[str, str] = {}
        self.mask_cache: dict[str, str] = {}
        self.class_cache: dict[tuple[str, str | None, bool | None], tuple[int, int] | None] = {}
        self.prose: list[tuple[int, str, bool | None]] = []  # (pos, text, strong; None = decide later)
        self.kw: bool | None = None  # keyword gate of the current raw line, when already known
        self.first_log = -1
        self.last_log = -1
        self.chains = 0
        self.run: tuple[str, int] | None = None  # (line prefix, frame indent) after a frame line

    # -- helpers -----------------------------------------------------------
    def _comp(self, comp: str | None, w: float, pos: int) -> None:
        if not comp:
            return
        if comp.startswith(_GENERIC_COMPONENTS):
            w *= 0.25
        self.comp_scores[comp] = self.comp_scores.get(comp, 0.0) + w
        self.comp_last[comp] = max(self.comp_last.get(comp, -1), pos)

    def _hint(self, comp: str, pos: int) -> None:
        """Log-prefix hints (logger names, glog files) add up to at most 1.0 per component."""
        old = self.hints.get(comp, 0.0)
        if old < 1.0:
            self.hints[comp] = old + 0.25
            self._comp(comp, 0.25, pos)

    def _tb_comps(self, frames: list[str], w: float, pos: int) -> None:
        """Score one traceback's components: each once, inner frames (nearer the error) weigh more."""
        last: dict[str, int] = {}
        for i, c in enumerate(frames):
            if c:
                last[c] = i
        order = sorted(last, key=last.__getitem__)
        n = len(order)
        for i, c in enumerate(order):
            self._comp(c, w * (0.5 + 0.5 * (i + 1) / n), pos - n + i)

    def _classify_cached(self, body: str, level: str | None, kw: bool | None = None) -> tuple[int, int] | None:
        """_classify(), once per distinct line: every rank prints the same error."""
        k = (body, level, kw)
        try:
            return self.class_cache[k]
        except KeyError:
            out = self.class_cache[k] = _classify(body, level, kw)
            return out

    def _signal(self, cat: int, sub: int, pos: int, line: str) -> None:
        self.signals.append((cat, sub, pos, line))

    def _new_exc(self, st: _Stream, key: str, pos: int, etype: str, msg: str | None, cpp: bool = False) -> _Exc:
        if st.chain_next and st.chain >= 0:
            chain = st.chain
        else:
            self.chains += 1
            chain = self.chains
        st.chain = chain
        st.chain_next = False
        rec = _Exc(pos, key, etype, (msg or "").strip(), chain, st.frames, cpp)
        st.cont_pos = pos
        rec.ignored = st.ignored
        st.ignored = False
        st.frames = []
        self.excs.append(rec)
        st.cont = rec
        st.cont_n = 0
        return rec

    # -- main loop ---------------------------------------------------------
    def feed(self, pos: int, raw: str) -> None:
        """Process one line; keep track of which streams are mid-structure (traceback, message, summary)."""
        self._feed(pos, raw)
        st = self.cur_st
        if st is None:
            return
        if st.in_tb or st.skip_code or st.cpp_type:
            until = 1 << 62
        elif st.fail is not None:
            until = st.fail_pos + _FAIL_WINDOW
        elif st.cont is not None:
            until = st.cont_pos + _CONT_WINDOW
        else:
            until = -1
        active = self.active
        key = self.cur_key
        if until >= 0:
            old = active.get(key)
            if old == until:
                return
            if old is None and key[:1] in "hs":
                self.odd_active += 1
            active[key] = until
        elif key in active:
            del active[key]
            if key[:1] in "hs":
                self.odd_active -= 1
        else:
            return
        self.busy_until = max(active.values()) if active else -1
        self.main_busy_until = active.get("", -1)
        self.odd_busy = self.odd_active > 0  # pdsh/srun streams: no cheap way to tell a line's stream

    def _feed(self, pos: int, raw: str) -> None:
        if len(raw) > MAX_LINE:
            raw = raw[:MAX_LINE]
        if raw[:1] in _PFX_FIRST:
            key, level, comp, s = _strip_prefixes(raw)
        else:
            key, level, comp, s = "", None, None, raw
        ls = s.lstrip()
        st = self.streams.get(key)
        if st is None:
            st = self.streams[key] = _Stream()
        self.cur_key = key
        self.cur_st = st
        self.cur_pos = pos
        if not ls:
            if st.cont is not None and st.cont.message:
                st.cont = None
            return
        body = ls.rstrip()
        indent = len(s) - len(ls)
        prev_last = self.last_log
        if self.first_log < 0:
            self.first_log = pos
        self.last_log = pos  # undone below for prose lines
        if comp:
            self._hint(comp, pos)

        # --- tracebacks (hot path: frames and source lines) ---
        if st.in_tb:
            if body.startswith('File "'):
                m = _FRAME.match(body)
                if m:
                    self._frame(st, m.group("path"))
                    st.after_frame = True
                    st.frame_indent = indent
                    prefix = raw[: len(raw) - len(s)]
                    if indent and (not prefix or _RANK_PREFIX.fullmatch(prefix)):
                        self.run = (prefix, indent)  # the caller may take the frames that follow in one match
                    return
            if st.after_frame and indent > st.frame_indent:
                return  # source line under a frame, or ^^^^ markers
            if _CARET.match(body) or body.startswith(("[Previous line repeated", "...")):
                return
        c0 = body[0]
        if c0 in "TDE" and body.startswith(_STRUCTURE):
            if body.startswith("Traceback (most recent call last)"):
                self._start_tb(st)
            elif body.startswith("Exception ignored in"):
                st.ignored = True  # unraisable exception from __del__: never the root cause
                st.cont = None
            else:
                st.chain_next = True
                st.cont = None
            return
        if st.in_tb:
            m = _EXC_TB.match(body)
            if m and self._tb_type_ok(m.group("type"), m.group("msg")):
                st.in_tb = False
                st.after_frame = False
                self._exception(st, key, pos, m.group("type"), m.group("msg"), indent)
                return
            st.in_tb = False
            st.after_frame = False
            self._flush_frames(st, pos)
        if body.startswith("```"):
            return

        # --- continuation of an exception message (it follows within a few lines) ---
        if st.cont is not None:
            if pos - st.cont_pos > _CONT_WINDOW:
                st.cont = None
            elif self._continuation(st, body, level, indent):
                return

        # --- torchrun failure summary ---
        if c0 == "R" and body.startswith("Root Cause (first observed failure)"):
            st.fail = "root"
            st.fail_pos = pos
            return
        if body == "Failures:":
            st.fail = "other"
            st.fail_pos = pos
            return
        if st.fail is not None:
            if pos - st.fail_pos > _FAIL_WINDOW:
                st.fail = None  # a torchrun summary is short; never let a truncated one swallow the rest
            elif self._failure_field(st, key, pos, body):
                return
        if st.skip_code:
            st.skip_code = False
            if indent > 0:
                return

        # --- everything else ---
        if (level == "INFO" or level == "DEBUG") and "Error" not in body:
            return  # INFO chatter
        cjk = not body.isascii() and _CJK.search(body) is not None
        if cjk and level is None and not key:
            self._mixed_line(st, key, pos, body)
            self._unlog(pos, prev_last)
            return
        if self._free_line(st, key, pos, body, level, indent) or cjk:
            return
        # Not a signal: user prose or log noise.
        if level is None and not key and indent < 4 and self.prose_like(body):
            self.prose.append((pos, body, None))
            self._unlog(pos, prev_last)

    def _unlog(self, pos: int, prev_last: int) -> None:
        """A prose line is not part of the pasted log span."""
        self.last_log = prev_last
        if self.first_log == pos:
            self.first_log = -1

    def _start_tb(self, st: _Stream) -> None:
        self._flush_frames(st, -1)
        st.in_tb = True
        st.after_frame = False
        st.frames = []
        st.cont = None

    def _flush_frames(self, st: _Stream, pos: int) -> None:
        if st.frames:
            self.orphan_frames.append((pos, st.frames))
            st.frames = []

    def take_run(self, text: str, start: int) -> list[str]:
        """Frame and source lines from `start` that the per-line rules would treat alike; return them.

        Why: a deep traceback is most of a paste's lines; one regex match
        takes them all, with the same effect as feeding them one by one.
        """
        prefix, indent = self.run  # type: ignore[misc]
        self.run = None
        run_rx, frame_rx = _tb_run_regexes(prefix, indent)
        m = run_rx.match(text, start)
        if m is None or m.end() == start:
            return []
        block = m.group(0)
        st = self.cur_st
        assert st is not None
        for path in frame_rx.findall(block):
            self._frame(st, path)
        return block.split("\n")[:-1]

    def _frame(self, st: _Stream, path: str) -> None:
        """A traceback frame: note its library component (paths repeat, so each is worked out once)."""
        c = self.frame_cache.get(path)
        if c is None:
            part = _pkg_part(path)
            c = self.frame_cache[path] = (_component(part) or "") if part else ""
        if c:
            st.frames.append(c)

    @staticmethod
    def _tb_type_ok(etype: str, msg: str | None) -> bool:
        if msg is not None or "." in etype:
            return True
        return etype.endswith(_TB_SUFFIX) or etype in ("KeyboardInterrupt", "StopIteration", "SystemExit")

    def _exception(self, st: _Stream, key: str, pos: int, etype: str, msg: str | None, indent: int) -> None:
        if etype.endswith("Warning") and not st.frames and not st.chain_next:
            self._warning(pos, etype, msg or "")
            return
        rec = self._new_exc(st, key, pos, etype, msg)
        if rec.message:
            rec.message = rec.message[:MAX_OUT_LINE]
        st.skip_code = False

    def _warning(self, pos: int, etype: str, msg: str) -> None:
        line = f"{etype}: {msg}" if msg else etype
        self._signal(5, 0, pos, line)
        self.warn_excs.append((pos, etype, msg))

    def _continuation(self, st: _Stream, body: str, level: str | None, indent: int) -> bool:
        """Handle a line after an exception line; False if it starts something new."""
        rec = st.cont
        assert rec is not None
        if (
            level is not None
            or body.startswith('File "')
            or body.startswith("Root Cause (first observed failure)")
            or body == "Failures:"
            or st.cont_n > 24
        ):
            st.cont = None
            return False
        if _SEPARATOR.match(body):
            if rec.type.endswith("ChildFailedError"):
                st.fail = st.fail or "pending"
                st.fail_pos = self.cur_pos
            elif st.fail is not None and body.startswith("="):
                st.fail = None  # the summary's closing rule, right after its embedded traceback
            st.cont = None
            return True
        st.cont_n += 1
        if rec.join_next:
            rec.join_next = False
            if rec.details:
                rec.details[-1] = rec.details[-1] + " " + body
            else:
                rec.details.append(body)
            return True
        if not rec.message:
            if indent > 0 or rec.cpp:
                rec.message = body[:MAX_OUT_LINE]
                return True
            if rec.type.endswith("ChildFailedError"):
                return True  # "train.py FAILED" etc.
        if _is_boilerplate(body):
            return True
        if body.endswith("Last error:"):
            rec.details.append(body)
            rec.join_next = True
            return True
        if body[0].isalpha() and _EXC_FREE.match(body) and not body.startswith(("nccl", "cuda")):
            # A new, separate exception (e.g. a second rank's error without a traceback).
            st.cont = None
            return False
        if self._classify_cached(body, None) is not None:
            rec.details.append(body[:MAX_OUT_LINE])
            return True
        if indent > 0 or rec.cpp or not body[0].isalpha():
            return True  # indented message body / C++ frames: part of the message, no signal
        # An unindented plain line: probably the log going on.
        st.cont = None
        return False

    def _failure_field(self, st: _Stream, key: str, pos: int, body: str) -> bool:
        if _SEPARATOR.match(body):
            if body.startswith("="):
                st.fail = None
            return True
        if body.startswith("[") and body.endswith("]:") or body.startswith("<NO_OTHER_FAILURES>"):
            return True
        m = _FAIL_FIELD.match(body)
        if not m:
            if st.fail == "pending" and body.endswith("FAILED"):
                return True
            return False
        k, v = m.group("k"), m.group("v").strip()
        root = st.fail == "root"
        if k == "exitcode":
            self._signal(3 if root else 4, 4 if root else 3, pos, f"exitcode: {v}")
        elif k == "error_file":
            if v and v != "<N/A>":
                self._signal(4, 7, pos, f"error_file: {v}")
        elif k == "traceback":
            if v.startswith("Traceback (most recent call last)"):
                self._start_tb(st)
            elif v and not _is_boilerplate(v):
                self._signal(3 if root else 4, 0 if root else 3, pos, v)
        return True

    def _mixed_line(self, st: _Stream, key: str, pos: int, body: str) -> None:
        """A CJK line: the words are prose; embedded English errors are signals."""
        prose = body
        found = False
        for m in _ASCII_SEG.finditer(body):
            seg = m.group(0)
            t = seg.strip(" \"'`:;,.()[]<>")
            if len(t) < 12:
                continue
            first = seg.lstrip()[:1]
            before = body[m.start() - 1] if m.start() else ""
            quoted = (first != "" and first in "\"'`") or (before != "" and before in "\u201c\u300c\u300e\u2018")
            if self._free_line(st, key, pos, t, None, 0, inline=True) or (
                quoted and len(_WORD.findall(t)) >= 3 and self._add_quoted(pos, t)
            ):
                prose = prose.replace(seg, " ", 1)
                found = True
        if found:
            prose = _WS.sub(" ", prose).strip()
        self.prose.append((pos, prose, True))

    def _add_quoted(self, pos: int, t: str) -> bool:
        self._signal(4, 4, pos, t[:MAX_OUT_LINE])
        return True

    def _free_line(self, st: _Stream, key: str, pos: int, body: str, level: str | None, indent: int,
                   inline: bool = False) -> bool:
        """Classify a line outside any traceback; True if it produced a signal."""
        if self.kw is not None and not inline:
            kw = self.kw  # computed by the fast path of the main loop
        else:
            kw = _kw_hit(body.lower() if len(body) <= _MAX_CLASSIFY else body[:_MAX_CLASSIFY].lower())
        if not kw:
            # Every pattern below contains a keyword; only a log level can still make this a signal.
            if level is None or level == "INFO" or level == "DEBUG":
                return False
            cls = self._classify_cached(body, level, False)
            if cls is None:
                return False
            self._signal(cls[0], cls[1], pos, body[:MAX_OUT_LINE])
            return True
        c0 = body[0]
        if c0.isalpha() or c0 == "_":
            if (level not in ("INFO", "DEBUG") or "Error" in body) and (
                "Error" in body
                or "Exception" in body
                or "Exit" in body
                or "Interrupt" in body
                or "Failure" in body
                or "Fault" in body
            ):
                m = _EXC_FREE.match(body)
                if m:
                    etype = m.group("type")
                    self._exception(st, key, pos, etype, m.group("msg"), indent)
                    return True
            if "Warning" in body:
                m = _WARN_FREE.match(body)
                if m:
                    self._warning(pos, m.group("type"), (m.group("msg") or "").strip())
                    return True
        if "Warning: " in body:
            m = _WARN_LOC.match(body)
            if m:
                part = _pkg_part(m.group("loc"))
                if part:
                    self._comp(_component(part), 1.0, pos)
                self._warning(pos, m.group("type"), m.group("msg").strip())
                st.skip_code = True
                return True
        if "terminate called" in body:
            m = _TERMINATE.search(body)
            if m:
                st.cpp_type = m.group("t")
                self._signal(4, 0, pos, body)
                return True
        if body.startswith("what()"):
            m = _WHAT.match(body)
            if m:
                msg = m.group("m").strip()
                if st.cpp_type:
                    self._new_exc(st, key, pos, st.cpp_type, msg, cpp=True)
                    st.cpp_type = None
                else:
                    self._signal(3, 0, pos, f"what(): {msg}")
                return True
        if "NCCL " in body:
            m = _NCCL_AT.search(body)
            if m:
                if "NCCL INFO" in body:
                    low = body.lower()
                    if not ("error" in low or "fail" in low or "abort" in low or "timeout" in low):
                        return False
                body = body[m.start():]
        if ": " in body and ("error" in body or "undefined reference" in body or "warning:" in body):
            m = _COMPILER_LOC.match(body)
            if m:
                body = body[m.end():]
                if body.startswith(("warning:", "note:")):
                    return False
        if (
            not inline
            and level is None
            and c0.isalpha()
            and ("Error: " in body or "Exception: " in body)
            and self._inline_exception(st, key, pos, body)
        ):
            return True
        if not inline and level is None and not key and indent < 4 and self.prose_like(body) and _HUMAN.search(body):
            return False  # the user's own sentence ("training hangs after the first step, here is the log:")
        cls = self._classify_cached(body, level, True)
        if cls is None:
            return False
        self._signal(cls[0], cls[1], pos, body[:MAX_OUT_LINE])
        return True

    def _inline_exception(self, st: _Stream, key: str, pos: int, body: str) -> bool:
        """'How do I fix RuntimeError: CUDA error: ...?' -> prose + exception."""
        m = _EXC_INLINE.search(body)
        if not m or m.start() == 0:
            return False
        head = body[: m.start()].strip()
        if not _PROSE_EN.match(head or "x"):
            return False
        if head:
            self.prose.append((pos, head, True))
        rest = body[m.end():]
        self._new_exc(st, key, pos, m.group("type"), rest)
        return True

    @staticmethod
    def prose_like(body: str) -> bool:
        """Plain words, not a log message: 'Any idea what causes this?' (not 'Loading model...')."""
        if len(body) < 8 or body.count("_") > 1 or body.count("/") > 1 or body.endswith("..."):
            return False  # the cheap tests first: each one alone rules a line out
        if len(_DIGIT.findall(body)) * 6 >= len(body) or len(body.split()) < 3:
            return False
        return _PROSE_EN.match(body) is not None and _LOG_VERBS.match(body) is None

    def _tail_lines(self) -> list[tuple[tuple[int, int, int], str]]:
        """No error at all (a hang): the last log lines say where it stopped."""
        prose_pos = {p for p, _, _ in self.prose}
        out: list[tuple[tuple[int, int, int], str]] = []
        lines = self.lines
        last = islice((p for p in range(len(lines) - 1, -1, -1) if lines[p]), 8)
        for pos in last:
            raw = lines[pos]
            if pos in prose_pos:
                continue
            _, _, _, rest = _strip_prefixes(raw[:MAX_LINE])
            body = rest.strip()
            if len(body) < 8 or _is_noise(body) or _is_boilerplate(body):
                continue
            if not _TAIL_OK.match(body) or " = " in body or body.endswith(":"):
                continue  # shell commands, code and config (an article's fix block) say nothing about a hang
            out.append(((6, 0, -pos), body[:MAX_OUT_LINE]))
            if len(out) >= 2:
                break
        return out

    # -- result -------------------------------------------------------------
    def result(self) -> Signature:
        for st in self.streams.values():
            self._flush_frames(st, 10**9)
        excs = self.excs
        primary: _Exc | None = None
        if excs:
            real = [e for e in excs if not e.ignored] or excs
            primary = real[-1]
            if primary.type in _WRAPPERS or primary.type.endswith(".ChildFailedError"):
                child = primary.type.endswith("ChildFailedError")
                cands = [
                    e
                    for e in real
                    if e.type not in _WRAPPERS
                    and not e.type.endswith(".ChildFailedError")
                    and (child or e.chain != primary.chain)
                ]
                if cands:
                    primary = cands[-1]

        ranked: list[tuple[tuple[int, int, int], str]] = []
        if primary is not None:
            ranked.append(((0, 0, 0), primary.line()))
            for i, d in enumerate(primary.details):
                ranked.append(((1, 0, i), d))
            others = [e for e in excs if e is not primary]
            same = [e for e in others if e.chain == primary.chain and e.stream == primary.stream]
            rest = [e for e in others if not (e.chain == primary.chain and e.stream == primary.stream)]
            order = sorted(same, key=lambda e: -e.pos) + sorted(rest, key=lambda e: -e.pos)
            for i, e in enumerate(order):
                ranked.append(((2, 0, i), e.line()))
                for d in e.details:
                    ranked.append(((3, 5, e.pos), d))
        for cat, sub, pos, line in self.signals:
            ranked.append(((cat, sub, pos), line))
        if not ranked:
            ranked = self._tail_lines()
        ranked.sort(key=lambda t: t[0])

        lines: list[str] = []
        templates: list[str] = []
        seen: set[str] = set()
        n_warn = 0
        for (cat, _, _), line in ranked:
            line = " ".join(line.split())[:MAX_OUT_LINE]
            if not line:
                continue
            if cat == 5:
                if n_warn >= MAX_WARNING_LINES:
                    continue
            t = self.mask_cache.get(line)
            if t is None:
                t = self.mask_cache[line] = mask(line)
            if t in seen:
                continue
            seen.add(t)
            if cat == 5:
                n_warn += 1
            lines.append(line)
            templates.append(t)
            if len(lines) >= MAX_SIGNAL_LINES:
                break

        exception: str | None = None
        message: str | None = None
        if primary is not None:
            exception = primary.type
            message = _WS.sub(" ", primary.message).strip() or None
        elif self.warn_excs:
            _, exception, msg = self.warn_excs[-1]
            message = _WS.sub(" ", msg).strip() or None

        # Components: frames of the primary chain weigh most, generic torch internals least.
        if primary is not None:
            ex_comp = _exc_module_component(primary.type)
            if ex_comp:
                self._comp(ex_comp, 1.5 if "." in ex_comp else 0.3, primary.pos)
        for e in excs:
            w = 2.0 if (primary is not None and e.chain == primary.chain and e.stream == primary.stream) else 1.0
            self._tb_comps(e.frames, w, e.pos)
            if e is not primary:
                self._comp(_exc_module_component(e.type), 0.5, e.pos)
        for p, frames in self.orphan_frames:
            self._tb_comps(frames, 1.0, max(p, 0))
        comps = sorted(self.comp_scores, key=lambda c: (-self.comp_scores[c], -self.comp_last[c]))

        # Prose: user's words around the paste (or clearly human lines inside it).
        prose_parts: list[str] = []
        seen_p: set[str] = set()
        for pos, text, strong in self.prose:
            if not text:
                continue
            inside = self.first_log >= 0 and self.first_log < pos < self.last_log
            if inside and not (strong or (strong is None and _HUMAN.search(text))):
                continue
            text = _WS.sub(" ", text).strip()
            if not text or text in seen_p:
                continue
            seen_p.add(text)
            prose_parts.append(text)
        prose = "\n".join(prose_parts)[:MAX_PROSE]

        return Signature(
            exception=exception,
            message=message,
            lines=tuple(lines),
            templates=tuple(templates),
            components=tuple(comps[:MAX_COMPONENTS]),
            prose=prose,
        )


def _exc_module_component(etype: str) -> str | None:
    """'torch.distributed.elastic.multiprocessing.errors.ChildFailedError' -> 'torch.distributed.elastic'."""
    if "." not in etype:
        return None
    mods = etype.split(".")[:-1]
    if mods[0] not in _LIBS:
        return None
    return ".".join(mods[:3])


def extract(text: str) -> Signature:
    """Pick the signal of a pasted error: exception, signal lines, templates, components, prose.

    Why: retrieval on a 200-line paste is dominated by noise (frames, progress
    bars, env dumps); the signature keeps what identifies the failure.
    Never raises; input beyond MAX_TEXT keeps its head and (more of) its tail,
    where the final exception lives.
    """
    try:
        return _extract(text)
    except Exception:  # pragma: no cover - last-resort guard, extraction is best effort
        return Signature(None, None, (), (), (), "")


# What a line outside any traceback, message or summary is (see _quiet_kind).
_PARSE, _PARSE_KW, _NOISE, _PROSE, _BLANK = range(5)
_DIGITS_TO_0 = bytes.maketrans(b"123456789", b"000000000")


def _quiet_kind(raw: str) -> int:
    """Parse the line (keyword gate off/on), or drop it as noise, prose or blank.

    Why: most of a long paste is chatter (INFO lines, bars, metrics) and is
    rejected here with a few substring tests.  The answer never depends on
    which digits a line holds, so the caller decides each line shape once.
    """
    if ("INFO" in raw[:64] or "it/s]" in raw or "s/it]" in raw) and not (
        "rror" in raw or "ail" in raw or "Traceback" in raw
    ):
        kw = False  # INFO chatter and progress bars: the commonest noise, decided without the gate
    else:
        kw = _kw_hit(raw.lower())
    if (
        kw
        or (raw[:1] in "WEF" and raw[1:5].isdigit())  # glog W/E/F lines carry their level only
        or "Traceback" in raw
        or "Root Cause" in raw
        or "Failures:" in raw
        or (not raw.isascii() and _CJK.search(raw))
    ):
        return _PARSE_KW if kw else _PARSE
    body = raw.strip()
    if _Extractor.prose_like(body) and not raw.startswith(("    ", "\t")):
        return _PROSE
    return _NOISE if body else _BLANK


def _extract(text: str) -> Signature:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = str(text)
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT // 4] + "\n" + text[-(MAX_TEXT * 3 // 4):]
    if "\x1b" in text:
        text = _ANSI_ESC.sub("", text)
    if "[0m" in text or "[0;" in text:
        text = _ANSI_LOOSE.sub("", text)  # colour codes whose ESC was lost in copy-paste
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    ex = _Extractor()
    feed = ex.feed
    kinds: dict[bytes, int] = {}  # line shape -> _quiet_kind(); log lines repeat their shape with new numbers
    lines = ex.lines = text.split("\n")
    ends: list[int] = []  # total length of lines[:i + 1], computed at the first traceback run
    skip_to = 0
    for pos, raw in enumerate(lines):
        if pos < skip_to:
            continue  # taken by a traceback run
        if ex.odd_busy or raw.startswith(("[rank", "[default", "(")):
            busy = ex.busy_until  # the line may belong to any stream
        else:
            busy = ex.main_busy_until  # an unprefixed line belongs to the main stream
        if pos > busy:
            # No stream is mid-structure: most lines are chatter, decided once per shape.
            if len(raw) > MAX_LINE:
                raw = raw[:MAX_LINE]
            shape = raw.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_0)
            kind = kinds.get(shape)
            if kind is None:
                kind = kinds[shape] = _quiet_kind(raw)
            if kind == _PROSE:
                ex.prose.append((pos, raw.strip(), None))
                continue
            if kind == _NOISE:  # log noise still belongs to the pasted span
                if ex.first_log < 0:
                    ex.first_log = pos
                ex.last_log = pos
                continue
            if kind == _BLANK:
                continue
            ex.kw = kind == _PARSE_KW
        else:
            ex.kw = None
        feed(pos, raw)
        if ex.run is not None and pos + 1 < len(lines):
            if not ends:
                ends = list(accumulate(map(len, lines)))
            taken = ex.take_run(text, ends[pos] + pos + 1)  # where the next line starts
            if taken:
                skip_to = pos + 1 + len(taken)
                ex.last_log = skip_to - 1
    return ex.result()




# ---------------------------------------------------------------------------
# frame_calls(): what the traceback was doing when it failed
# ---------------------------------------------------------------------------

_FRAME_CALL = re.compile(
    r'^(?:\[rank\d+\]:)?[ \t]*File "(?P<path>[^"\n]{1,1000})", line \d{1,9}, in (?P<func>[\w<>.]{1,200})[ \t]*\n'
    r'(?:(?:\[rank\d+\]:)?[ \t]+(?P<src>[^\s\n][^\n]{0,300}))?', re.M)
_GENERIC_CALLS = frozenset(
    """<module> <lambda> <listcomp> <dictcomp> <genexpr> main _main run __call__ _call_impl _wrapped_call_impl
    forward wrapper inner _fn fn decorate_context wrapped new_func launch _run_module_as_main _run_code
    __init__ record_function wrapper_func _wrap func call _func invoke""".split())
MAX_CALL_FRAMES = 12


def frame_calls(text: str) -> tuple[str, ...]:
    """The functions (and their source lines) of the deepest traceback frames, deepest first.

    Why: many errors share one final line (every out-of-memory error says `CUDA out of
    memory`); which call failed (`from_pretrained`, `backward`, `optimizer.step`, a
    checkpoint save) tells the causes apart. A paste cut off before its final exception
    line has only these frames to go on. Generic wrappers (`forward`, `_call_impl`) say
    nothing and are left out; each call is kept once, at its deepest place.
    """
    tail = text[-MAX_TEXT:]
    seen: dict[str, None] = {}
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
    r"This error originates from a subprocess|Traceback \(most recent call last\)", re.I)
"""Lines that launchers, pip and PyTorch print around many different failures: a debugging hint, a
`ChildFailedError` summary, a SIGTERM to the other ranks, pip's wheel-build epilogue."""


def focus(sig: Signature) -> Signature:
    """The signature without its generic lines, when it has any other signal line.

    Why: a real error followed by a long tail of launcher noise (SIGTERM to the other ranks, the
    torchrun failure summary) otherwise ranks the article about that noise above the one about
    the error. A paste that holds nothing but the summary keeps it: then it is the signal.
    """
    keep = [i for i, line in enumerate(sig.lines) if not GENERIC_LINE.search(line)]
    if not keep or len(keep) == len(sig.lines) or len(sig.lines) != len(sig.templates):
        return sig
    return Signature(sig.exception if not GENERIC_LINE.search(sig.exception or "") else None, sig.message,
                     tuple(sig.lines[i] for i in keep), tuple(sig.templates[i] for i in keep), sig.components,
                     sig.prose)
