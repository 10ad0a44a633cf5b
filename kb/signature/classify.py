"""Line classification: is a free-standing line a signal (and which kind), noise or prose."""

from __future__ import annotations

import re

from ..text import EAST_ASIAN
from .model import MAX_LINE
from .mask import _A, _normalize
from .prefixes import _ANSI_LOOSE, _strip_prefixes


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
    "Unable to find hostfile, will proceed with training with local",  # every single-node DeepSpeed run
    "To disable this warning, you can either",  # huggingface/tokenizers' advice under its fork warning
    # PyTorch 2.4+ at the exit of any process that never called destroy_process_group, a crash's included
    "process group has NOT been destroyed before we destruct ProcessGroupNCCL",
    # NCCL_DEBUG=INFO probes every start prints (an optional plugin or InfiniBand library not found, then a fallback;
    # NCCL 2.7 and older print the InfiniBand one at WARN)
    "NCCL INFO NET/Plugin", "NCCL INFO Failed to open libibverbs", "NCCL WARN Failed to open libibverbs",
)
# Keyword gate: substrings that any signal line contains (lowercased), then whole tokens, then phrases.
_KW_WORDS = frozenset(
    w.encode()
    for w in """terminate terminated terminating undefined cannot unable unsupported invalid illegal segfault
    segmentation dumped oom timeout timeouts timed expected mismatch mismatched incompatible denied refused signal
    sigkill sigsegv sigabrt sigbus sigterm deprecated deprecation nan inf hang hangs hanging stuck deadlock deadlocks problem
    corrupt corrupted overflow exitcode""".split()
)
_GENERIC_WORDS = frozenset(
    w.encode()
    for w in """error errors failed failure fatal abort aborted aborting timeout cannot invalid illegal incompatible
    unsupported denied deadlock deadlocks hang hangs hanging stuck""".split()
)
_WARN_WORDS = frozenset(w.encode() for w in "warn warning warnings deprecated".split())
_STRONG_PHRASES = (
    "out of memory", "no module named", "no such file or directory", "unsupported gpu architecture",
    "compiled without gpu support", "cuda setup failed", "required library version not found", "not found",
    "not detected", "not available", "not supported", "address already in use", "connection refused",
    "permission denied", "mismatch", "not compatible with",
)
_REQUIREMENT = re.compile(r"\bonly supports? .{1,80}(?:or newer|or later|or above|or higher|>=)")
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
    r"|getting|get this|here is|here's|below|he|she|he's|she's|they|they're|someone)\b",
    re.I,
)
_FIRST_PERSON = re.compile(r"(?:(?:when|and|but|so|then|also|now|hi|hello)[ ,]+)?(?:I|I'm|I've|we|we're) [a-z]{2,}\b")
"""A sentence that opens in the first person ('I am training a model and this error appears …', 'when I run
train.py , I got en error'): no tool logs that way (glog's `I0412 …` is no word)."""
_LOG_VERBS = re.compile(
    r"(?:Loading|Using|Building|Emitting|Detected|Setting|Initializ|Installing|Collecting|Downloading"
    r"|Running|Creating|Processing|Successfully|Requirement already|Attempting|Found|Saving|Time to load"
    r"|Allowing ninja|Preparing|Uninstalling|Starting|Started|Waiting|Applying|Launching|Map|Tokeniz"
    r"|Generating|Converting|Resolving|Stored in|Obtaining|Looking in|Checking)\b"
)
_PROSE_CHARS = r"\w ,'\u2019?!.:;()/\"`%~+-"
_PROSE_EN = re.compile(rf"[A-Za-z][{_PROSE_CHARS}]*$")
_PROSE_HEAD = re.compile(rf"[A-Za-z][=@{_PROSE_CHARS}]*$")
"""The words before an exception named mid-sentence: like prose, but they may quote code (`local_rank==0`)
or greet someone (`Dear @maintainer: I ran into "RuntimeError: …"`)."""
_CJK = re.compile(f"[{EAST_ASIAN}]")
_ASCII_SEG = re.compile(r"[\x20-\x7e]{12,}")
_WORD = re.compile(r"[A-Za-z]{2,}")
_CARET = re.compile(r"[\^~ ]+$")
# A log message as tools print it: a capitalised word, then at least two more words ("Loading extension module x...").
_TAIL_OK = re.compile(r"[A-Z][A-Za-z]+ +[^ ]+ +[^ ]+", _A)
_MAX_CLASSIFY = 600
_LEAD_IN = re.compile(
    r"(?:\d{1,2}[.)] |[-*] )?(?:\*\*|#{1,6} )?(?:(?:and|then|but|so|it|it's|i|we|my|me|this|that|which|there|got|get|"
    r"gets|getting|showing|shows|show|see|saw|observe|observed|encountered|received|raised|thrown|resulted|results|"
    r"result|in|of|for|the|following|follows|as|like|an|a|same|below|here|is|was|are|with|message|full|complete|"
    r"entire|information|info|details|occurred|occurs|happened|happens|appeared|appears|"
    r"error|errors|exception|output|log|traceback|stack|trace)\b[ ,]*){1,10}[:.-]?\s*(?:\*\*)?$", re.I)
"""A line made only of words that introduce an error ("resulted in the following error:", "**Error**",
"And the error is", "The error message is as follows:"): what the user wrote over the paste, not a line of it."""
_ANNOUNCED = r"(?:errors?|exceptions?|traceback|messages?|logs?|output)"
_LEAD_IN_SENTENCE = re.compile(
    rf"[A-Za-z](?:(?!\w(?:Error|Exception)\b).)*?\b(?:the following {_ANNOUNCED}|as follows|"
    r"error (?:messages?|logs?|information|info|output|details)|"
    rf"(?:an?|the|this|that|these|some|same) (?:\w+ ){{0,2}}{_ANNOUNCED})\b[^:：]*[:：]\s*$",
    re.I)
"""A user's sentence that announces the paste below it ("However, during server startup, the following error
occurred:", "…, but the port seems to be set randomly. Sometimes it reports an error:"): it ends with a colon
and names no exception type. A tool's own header starts otherwise
(`-- Process 2 terminated with the following error:`) or names one (`RuntimeError: … the following error (…):`)."""


def _tokens(low: str) -> list[bytes]:
    """Word tokens of a lowercased line (identifiers with '_' stay whole); bytes.translate is the fast path."""
    return low.encode("utf-8", "surrogatepass").translate(_TOK_TABLE).split()


_WIN_FRAME = re.compile(r"[0-9A-Fa-f]{16,32} [\w.-]{1,100}!")
"""A C++ frame of c10's stack on Windows (`00007FFF76662C24... c10.dll!c10::Error::Error [...]`), the
counterpart of Linux's `frame #0: c10::Error::Error(...)`."""


def _is_boilerplate(body: str) -> bool:
    """Hint lines every such error prints; they say nothing about this failure."""
    if body.startswith(_BP_PREFIX) or _WIN_FRAME.match(body):
        return True
    for p in _BP_SUBSTR:
        if p in body:
            return True
    return False


_ENV_KEY = r"`?(?![\w ]*(?:error|fail|exception|fatal))[A-Za-z][\w .()?/`-]{0,60}:"
"""The key of an environment report's field (`Accelerate config:`, `Tensorflow version (GPU?):`), never one
that names an error (`Error: not found` is one)."""
_ENV_FIELD = re.compile(rf"[-*] {_ENV_KEY}[ \t]*not found$|not found$", re.I)
"""A field of an environment report with nothing to report: `- Accelerate config:    not found`, as
`transformers env` prints it for the issue template's System Info, or the value alone on its own line."""


_ABSENT_FIELD = re.compile(
    rf"^[ \t]*(?:[-*] )?{_ENV_KEY}[ \t]*(?:not installed(?: \(NA\))?|not found|Could not collect|N/?A)[ \t]*$\n?",
    re.I | re.M)


def without_absent_fields(text: str) -> str:
    """The text without an environment report's fields for what the user does not have (`- Jax version: not
    installed`, `- Tensorflow version (GPU?): not installed (NA)`): read as words, the report of every
    transformers issue would make the paste look like one about JAX or TensorFlow."""
    if "not installed" in text or "not found" in text or "Could not collect" in text or "N/A" in text:
        return _ABSENT_FIELD.sub("", text)
    return text


def _is_noise(body: str) -> bool:
    """Separators, progress bars and environment dumps (pip list, ds_report, key=value, nvidia-smi,
    `python -m torch.utils.collect_env`, whose `Clang version: Could not collect` is no error)."""
    if _SEPARATOR.match(body) or body.endswith("Could not collect"):
        return True
    if body[-9:].lower() == "not found" and _ENV_FIELD.match(body):
        return True
    if ("%|" in body or "it/s" in body or "s/it" in body or not body.isascii()) and _PROGRESS.search(body):
        return True
    c = body[0]
    if c in "|+\u2502\u2570\u256d\u251c" or body.startswith(("[pip", "[conda]")) or "......" in body:
        return True
    if "=" in body and _KV.match(body):
        return True
    return _PIPROW.match(body) is not None


_PROMPT = re.compile(r"(?:\([\w.-]{1,60}\) )?[\w.-]{1,60}@[\w.-]{1,100}:[^\s$#]{0,300}[$#] ")


_OPTION_LINE = re.compile(r"--[A-Za-z][\w.-]*(?:[= ][^ ]+)?(?: \\)?$")
"""One option of a command continued over lines (`  --verbosity error`, `--log_level error \\`)."""


def _is_command(body: str) -> bool:
    """A shell command the user ran (`$ journalctl -k | grep -i oom`, `root@pod:/app# python x.py`, an option line
    of a long one): what they typed, not what failed, even when it names an error word."""
    return body.startswith("$ ") or (body[0].isalnum() or body[0] == "(") and "@" in body[:160] and (
        _PROMPT.match(body) is not None) or body.startswith("--") and _OPTION_LINE.match(body) is not None


_SHELL_WORD = re.compile(
    r"(?:sudo )?(?:cp|mv|ln|rm|cd|ls|cat|export|source|pip3?|conda|python3?|bash|sh|git|docker|apt(?:-get)?|yum|"
    r"nvidia-smi|torchrun|deepspeed|accelerate|make|cmake|wget|curl|chmod|mkdir|echo|nvcc|[A-Z_]{3,40}=\S*) ")


def _is_quoted_command(seg: str) -> bool:
    """A command the user quotes in a sentence (`将cp libbitsandbytes_cuda121.so libbitsandbytes_cpu.so但是不行`):
    what they tried, not what failed; one that names an error word (`python setup.py egg_info did not run
    successfully`) is still the error."""
    return _SHELL_WORD.match(seg) is not None and not _kw_hit(seg.lower())


def _is_requirement(low: str) -> bool:
    """A hardware or version requirement the running setup fails: `FlashAttention only supports Ampere GPUs or
    newer.`, `Triton only supports devices of CUDA Capability >= 7.0`. No error word, but an error all the same."""
    return "only support" in low and _REQUIREMENT.search(low) is not None


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
    if _is_requirement(low):
        return True
    # A negated line is a signal only in these phrases (`non-zero` included; `non-PyTorch memory` is no negation)
    if "not " in low or "no " in low or "n't" in low or "non-zero" in low:
        return "not found" in low or "no such" in low or "no module" in low or "can't" in low or (
            "could not" in low or "not supported" in low or "not available" in low or "not detected" in low
            or "not compatible with" in low or "did not" in low or "non-zero" in low
        )
    return (
        "what():" in low
        or "out of memory" in low
        or "in use" in low
        or "exit status" in low
        or "exit code" in low
        or "_status_" in low
        or "but got" in low
        or _is_advice(low)
    )


_ADVICE = re.compile(r"\bplease (?:set|use|pass|make sure|specify|install|upgrade|consider|ensure)\b")


def _is_advice(low: str) -> bool:
    """A library's advice (`… right-padding was detected! … please set `padding_side='left'``): transformers and
    friends warn this way, with no level and no error word. A user's "please help" is prose before it gets here."""
    return "please " in low and _ADVICE.search(low) is not None


_HEADING = re.compile(r"#{1,6} [^:]{1,80}$")


def _classify(body: str, level: str | None, kw: bool | None = None) -> tuple[int, int] | None:
    """(category, sub-priority) of a free-standing line, or None for noise.

    Categories: 3 = specific error (compiler, CUDA, NCCL, signals), 4 = generic
    error, 5 = warning.  Lower sub-priority ranks first.
    """
    if level == "INFO" or level == "DEBUG":
        return None  # benign INFO lines mention "error"/"not found" all the time
    if _LEAD_IN.match(body) or _LEAD_IN_SENTENCE.match(body) or body.startswith("#") and _HEADING.match(body):
        return None  # the user's "resulted in the following error:" or "# Error Report" over the error itself
    if body.startswith('File "') and _FRAME.match(body) or _CARET.match(body) or body.startswith("raise "):
        return None  # a frame, caret or source line of a traceback whose header was not pasted, logged at ERROR
    if len(body) > _MAX_CLASSIFY:
        body = body[:_MAX_CLASSIFY]
    low = body.lower()
    if kw is None:
        kw = _kw_hit(low)
    if not kw and level is None:
        return None
    if _is_boilerplate(body) or _is_noise(body) or _is_command(body):
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
    ) or _is_requirement(low):
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
    if not _WARN_WORDS.isdisjoint(toks) or _is_advice(low):
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
