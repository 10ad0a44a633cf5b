"""`mask()`: volatile values (numbers, paths, hosts, ranks, sizes) -> placeholders, the same in queries and articles."""

from __future__ import annotations

import re

from .model import MAX_LINE
from .vocab import _PATH_ROOTS


_A = re.ASCII
_ANSI_ESC = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)?|\x1b")
_CTRL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_WS = re.compile(r"\s+")

_URL = re.compile(
    r"(?<![\w])(?:https?|ftp|file|s3|gs|hf|wss?)://"
    r"[^\s<>()\[\]'\"`]*[^\s<>()\[\]'\"`.,;:!?]",
    _A,
)
_MD_LINK = re.compile(r"\[([^\]\n]{1,120})\]\((?:link|[^)\s]{1,500})\)")
"""A Markdown link, `[nccl-tests](https://github.com/NVIDIA/nccl-tests)`: in a sentence, its words are the text."""
# Path: lookbehinds sit after the first literal so the scan can skip ahead fast.
_PC = r"[^\s:'\"`,;()\[\]{}<>|=*?]"
_NOT_BEFORE_PATH = r"[\w.~/\\>:-]"
_PATH = re.compile(
    r"/(?<!" + _NOT_BEFORE_PATH + r"/)" + _PC + r"+"
    r"|~/(?<!" + _NOT_BEFORE_PATH + r"~/)" + _PC + r"*"
    r"|\./(?<!" + _NOT_BEFORE_PATH + r"\./)" + _PC + r"*"
    r"|\.\./(?<!" + _NOT_BEFORE_PATH + r"\.\./)" + _PC + r"*"
    # a hidden directory relative to where the tool ran: `.cache/torch_extensions/py310_cu118`
    r"|\.(?<!" + _NOT_BEFORE_PATH + r"\.)[A-Za-z_][\w-]{0,40}/" + _PC + r"*",
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
    if "`" in s:  # Markdown's code quotes: an article quoting `srcIndex < srcSelectDimSize` and one that does not
        s = " ".join(s.replace("`", "").split())  # name the same error line
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
