"""Line cleaning: log prefixes, ranks, timestamps; the component a prefix or path names."""

from __future__ import annotations

import re

from .vocab import _FILE_COMPONENTS, _LIBS
from .mask import _A, _pkg_part


_LVL = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
# Each log-prefix shape as one named branch; groups "<name>_l" = level, "_f" = file, "_g" = logger.
_PFX_BRANCHES: dict[str, str] = {
    "rank": r"\[(?:rank|default)(?P<rank_n>\d{1,5})\]: ?",
    # Open MPI's `mpirun --tag-output` (Horovod, DeepSpeed's MPI launcher): `[1,3]<stderr>:`, job and rank
    # (SageMaker's MPI runs add the rank's name and host: `[1,mpirank:1,algo-2]<stderr>:`)
    "mpi": r"\[\d{1,5},(?:mpirank:)?(?P<mpi_n>\d{1,6})(?:,[\w.-]{1,64})?\]<std(?:out|err)>: ?",
    # `kubectl logs --prefix`: `[pod/train-0/trainer] `, one stream per pod and container
    "pod": r"\[pod/(?P<pod_n>[\w.-]{1,253}/[\w.-]{1,63})\] ",
    # Ray's `(RayTrainWorker pid=1234, ip=10.0.0.1)`, SkyPilot's `(task, pid=12345)`, `(worker1, rank=1, pid=2345, …)`
    "pid": r"\((?:[A-Za-z_][\w.]{0,60},? )?(?:[a-z_]{1,20}=\w{1,20},? ){0,3}pid=(?P<pid_n>\d{1,9})(?:, ip=[^)\s]{0,64})?\) ?",
    "glogb": r"\[(?P<glogb_l>[IWEF])(?:\d{3,4} \d{2}:\d{2}:\d{2}(?:\.\d+)?)? (?:\d+ )?(?P<glogb_f>[\w./-]{1,200}):\d+\] ?",
    "glog": r"(?P<glog_l>[IWEF])\d{3,4} \d{2}:\d{2}:\d{2}(?:\.\d+)? +\d+ (?P<glog_f>[\w./-]{1,200}):\d+\] ?",
    "vllm": r"(?P<vllm_l>" + _LVL + r") \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? \[?(?P<vllm_f>[\w./-]{1,200}):\d+\] ?",
    "hfb": r"\[(?P<hfb_l>" + _LVL + r")\|(?:(?P<hfb_f>[\w./-]{1,200}):\d+\] +"
    r"(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[,.]\d+)? *>> *)?"
    r"|\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[,.]\d+)?\] +(?P<hfb_g>[\w.]{1,200})(?::\d+)? *>> *)",
    "dslvl": r"\[(?P<dslvl_l>" + _LVL + r")\] *(?:\[(?P<dslvl_f>[\w.-]{1,200}):\d+:\w+\] *)?",
    "pylog": r"(?P<pylog_l>" + _LVL + r"):(?P<pylog_g>[A-Za-z_][\w.]{0,200}):",
    "uvi": r"(?P<uvi_l>" + _LVL + r"):  +",
    "tsb": r"\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\] ?(?:(?P<tsb_g>[A-Za-z_][\w.]{0,200}): (?=\[))?",
    # one space after the stamp, not a frame's indentation (`2024-05-01T10:00:01Z   File "…"`)
    "ts": r"(?:\d{4}(?:-\d{2}-\d{2}|/\d{2}/\d{2})[ T_]|\d{2}/\d{2}/\d{4} )\d{2}:\d{2}:\d{2}(?:[,.]\d+)?(?:Z|[+-]\d{2}:?\d{2})?(?: *[-|:] *|[ \t]?)",
    # a time of day alone (Jenkins' timestamper: `10:00:01  `, two blanks; a frame's indentation follows them)
    "tod": r"\d{2}:\d{2}:\d{2}(?:[,.]\d{1,6})?(?:  | )(?=.)",
    # Google Cloud's Logs Explorer: the level, the stamp and the resource's labels (Vertex AI's `workerpool0-0`)
    "gcp": r"(?P<gcp_l>" + _LVL + r") \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z \[[^\]\n]{1,200}\] ",
    # CloudWatch's export: the event's epoch milliseconds and a tab before the stamp
    "epoch": r"\d{13}\t",
    # PM2's `0|infer    | `: the process number and name
    "pm2": r"\d{1,3}\|[\w.-]{1,60} *\| ",
    # a container runtime's own log file (/var/log/containers/*.log, what Loki and Fluentd ship) after its stamp
    "cri": r"std(?:out|err) [FP] ",
    "nccl": r"[\w.-]{1,100}:\d+:\d+ \[\d+\] (?:[\w./-]{1,200}:\d+ )?(?=NCCL )",
    "lvl": r"(?P<lvl_l>" + _LVL + r") *[-|:] +",
    "lvlb": r"\[(?P<lvlb_l>" + _LVL + r")\] *",
    # a bare level after a stamp (`2024/05/01 12:00:00 ERROR  …`, Go's log and `%(levelname)-8s`): one blank
    # goes with it; the rest may be a frame's indentation
    "lvlsp": r"(?P<lvlsp_l>" + _LVL + r") (?=.)",
    "logger": r"(?P<logger_g>[A-Za-z_][\w.]{0,200}(?::[\w<>]{1,100}:\d+)?) +- +",
    "pdsh": r"(?P<pdsh_h>[A-Za-z][A-Za-z0-9]{0,30}(?:-[A-Za-z0-9]{1,30}){0,6}-?\d{1,6}|\d{1,3}(?:\.\d{1,3}){3}): (?=.)",
    # `srun --label`: the task number, padded with blanks to the widest (` 3: ` in a job of 10 to 99 tasks)
    "srun": r" {0,3}(?P<srun_n>\d{1,4}): (?=.)",
    # `> `, and a quote of a quote (`>> `, `> > `) in mail and forums; a mail client's `>` with no blank after it
    "quote": r"(?:> ?){1,8}(?<= )(?=\S)|>{1,3}(?=[A-Za-z_ ])",
    # A bracketed process or line number in front of another bracketed prefix: `[80746] [rank0]:[E321 …]`.
    "tag": r"\[\d{1,9}\] (?=\[)",
    # syslog / systemd journal: `Oct 04 15:02:41 llm sd-webui-forge-start[394]: `
    "syslog": r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)? [\w.-]{1,100} "
    r"[\w.@/-]{1,100}(?:\[\d{1,9}\])?: ",
    # Heroku's and Fly.io's log drains after the stamp: `app[worker.1]: `, `app[148e1234abcd56] iad [info]`
    "paas": r"app\[[\w.-]{1,60}\](?:: | [a-z]{3} \[(?P<paas_l>info|warn|error|debug)\])",
    # journalctl -o short-iso: the host and the process after an ISO stamp (`… gpu-node-12 python[12345]: `)
    "jproc": r"[\w.-]{1,100} [\w.@/-]{1,100}\[\d{1,9}\]: ",
    # Weights & Biases relays a run's stderr: `wandb: ERROR   File "…"`, the frame's indentation kept (a relay,
    # so not a component: its own messages name it, `call wandb.login(…)`)
    "wandb": r"wandb: (?:(?P<wandb_l>" + _LVL + r") (?=.))?",
    # Docker BuildKit's plain progress: the step and the seconds since it started (`#12 0.415 `)
    "buildkit": r"#\d{1,4} \d{1,6}\.\d{3} ",
    # a GitHub Actions annotation after the runner's stamp (`##[error]ModuleNotFoundError: …`)
    "gha": r"##\[(?:(?P<gha_l>error|warning|notice|debug)|group|endgroup)\]",
    # docker compose's service column and a logger's stream column: `qanything-container-local  | `, `stderr | `
    "compose": r"[A-Za-z][\w.-]{0,60} +\| ",
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


_BRACKETS = ["rank", "mpi", "pod", "glogb", "hfb", "dslvl", "tsb", "tag"]
_PFX_FIRST = _by_char(_BRACKETS, ["syslog", "glog", "vllm", "wandb", "gcp", "pylog", "uvi", "pdsh", "compose"],
                      ["ts", "epoch", "pm2", "pdsh", "srun", "tod"],
                      {"(": ["pid"], ">": ["quote"], "#": ["buildkit", "gha"], " ": ["srun"]})
_PFX_NEXT = _by_char(_BRACKETS, ["glog", "vllm", "pylog", "uvi", "compose"], ["ts"], {"(": ["pid"]})
_CTX_LETTER = ["cri", "lvl", "lvlsp", "compose", "paas", "jproc"]
"""What may follow a stamp or a level; a line that holds ` - ` may also name its logger (`_PFX_CTX_LOGGER`)."""
_PFX_CTX = _by_char(_BRACKETS + ["lvlb"], _CTX_LETTER, [], {"#": ["gha"]})
_PFX_CTX_LOGGER = _by_char(_BRACKETS + ["lvlb"], _CTX_LETTER + ["logger"], [], {"#": ["gha"]})
_PFX_NCCL = _pfx_regex(["nccl"])
_CTX_SET = frozenset({"syslog", "jproc", "ts", "tod", "tsb", "lvl", "lvlb", "lvlsp", "logger", "glogb", "glog", "vllm", "hfb", "dslvl", "pylog",
                      "uvi"})
_PFX_META = {
    n: (n + "_l" if f"?P<{n}_l>" in p else None, tuple(n + s for s in ("_f", "_g") if f"?P<{n}{s}>" in p))
    for n, p in _PFX_BRANCHES.items()
}
_ANSI_LOOSE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)?|\x1b"
                         r"|(?:ESC|\^\[)?\[(?:\d{1,3};)*\d{1,3}m")
"""Colour codes, also those whose ESC byte was lost in copy-paste or shown as the letters `ESC` or `^[`."""
_LEVEL_NORM = {"WARN": "WARNING", "FATAL": "CRITICAL", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL",
               "error": "ERROR", "warning": "WARNING", "warn": "WARNING", "notice": "INFO", "info": "INFO", "debug": "DEBUG"}


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
        if pos and line[pos] == " ":
            # Blanks after a stamp: more prefix (`… 10:00:00,123   INFO …`), or a frame's indentation to keep.
            ahead = len(line) - len(line[pos:].lstrip(" "))
            rx = table.get(line[ahead]) if ahead < n else None
            if rx is None or not rx.match(line, ahead):
                break
            pos = ahead
        rx = table.get(line[pos])
        m = rx.match(line, pos) if rx is not None else None
        if m is None and nccl:
            m = _PFX_NCCL.match(line, pos)
        if m is None or m.end() == pos:
            break
        g = m.lastgroup
        if g == "rank" or g == "mpi":  # `[rank3]:` and Open MPI's `[1,3]<stderr>:` name the same stream
            key += "r" + m.group(g + "_n")
        elif g == "pid":
            key += "p" + m.group("pid_n")
        elif g == "pdsh":
            key += "h" + m.group("pdsh_h")
        elif g == "pod":
            key += "h" + m.group("pod_n")  # like a pdsh host: lines of one stream, not told apart cheaply
        elif g == "srun":
            key += "s" + m.group("srun_n")
        elif g not in ("quote", "nccl", "cri"):
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
