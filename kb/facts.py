"""Numbers as evidence: the values masking throws away, kept as typed facts.

Masking turns `Tried to allocate 4.28 GiB` into `Tried to allocate <SIZE>` so that one
template matches every paste of that error. But some of those values decide *which*
cause it is: an out-of-memory error where PyTorch reserves far more than it allocated
is fragmentation, one where reserved ≈ allocated is not; a collective that times out on
its first sequence number never worked, one at `SeqNum=48211` hung deep into training.

`extract_facts(text)` reads such values from a paste. An article states the conditions
it applies to in its front matter (`applies_when: "reserved_gib > 1.3 * allocated_gib"`,
see corpus/AUTHORING.md), and `check(condition, facts)` says whether the paste supports
it (+1), contradicts it (-1), or does not say (0, a name the paste has no value for).
"""

from __future__ import annotations

import ast
import operator
import re

from .errors import KbError

_SIZE = r"(\d+(?:\.\d+)?)\s*([KMGT]i?B|bytes)"
_UNITS = {"b": 2**-30, "K": 2**-20, "M": 2**-10, "G": 1.0, "T": 2**10}


def _gib(value: str, unit: str) -> float:
    return float(value) * _UNITS[unit[0]]


# name -> pattern whose groups are (number, unit) for sizes, or (number,) otherwise.
# The first match in the paste wins: pastes repeat the same error per rank.
_SIZE_FACTS: dict[str, tuple[re.Pattern[str], ...]] = {
    "requested_gib": (re.compile(r"Tried to allocate " + _SIZE),),
    "total_gib": (re.compile(r"total capacity of " + _SIZE), re.compile(_SIZE + r" total capacity")),
    "free_gib": (re.compile(r"of which " + _SIZE + r" is free"), re.compile(_SIZE + r" free;")),
    "allocated_gib": (re.compile(_SIZE + r" is allocated by PyTorch"), re.compile(_SIZE + r" already allocated")),
    "reserved_gib": (re.compile(_SIZE + r" reserved in total by PyTorch"),),
    "unallocated_reserved_gib": (re.compile(_SIZE + r" is reserved by PyTorch but unallocated"),),
    "process_gib": (re.compile(r"this process has " + _SIZE + r" memory in use"),),
}
_NUMBER_FACTS: dict[str, tuple[re.Pattern[str], ...]] = {
    "nccl_seq": (re.compile(r"SeqNum=(\d+)"),),
    "nccl_timeout_s": (re.compile(r"Timeout\(ms\)=(\d+)"),),
    # The device's own capability first (`RTX 5090 with CUDA capability sm_120`, `has compute capability 7.5`):
    # the same paste lists the builds' capabilities too (`supports CUDA capabilities sm_50 sm_60 …`).
    "compute_capability": (re.compile(r"with CUDA capability sm_(\d{1,2})(\d)\b"),
                           re.compile(r"[Cc]apability (?:of )?(\d+)\.(\d)\b")),
}
_BARE_SM = re.compile(r"\bsm_(\d{1,2})(\d)\b")
"""The last resort for compute_capability, after a GPU named by model: an `sm_80` that may be a build's list."""


# `size mismatch for NAME: copying a param with shape torch.Size([a, b]) from checkpoint, the shape in current
# model is torch.Size([c, d])`: which parameter and which shape decide between the usual causes (a ZeRO-3 save that
# wrote empty placeholders, `[0]`; an enlarged vocabulary, embeddings or LM head; an adapter for another base model).
_SIZE_MISMATCH = re.compile(r"size mismatch for ([\w.]+): copying a param with shape (?:torch\.Size\()?\[([\d,\s]*)\]"
                            r"(?:\)?,? from checkpoint, the shape in current model is (?:torch\.Size\()?\[([\d,\s]*)\])?")
_EMBEDDING_PARAM = re.compile(r"(?:^|\.)(?:embed_tokens|lm_head|wte|word_embeddings|embed_out|embed_in|shared|output_layer)\.")


def _numel(dims: str) -> int:
    n = 1
    for d in re.findall(r"\d+", dims):
        n *= int(d)
    return n


_SHAPE_FACTS = ("checkpoint_numel", "model_numel", "embedding_mismatch")


def _shape_facts(text: str) -> dict[str, float]:
    """`checkpoint_numel` / `model_numel`: elements of the first mismatched parameter as saved and as the
    model has it (0: an empty ZeRO-3 placeholder); `embedding_mismatch`: 1 when a non-empty embedding or
    LM-head parameter is among the mismatched ones."""
    found = _SIZE_MISMATCH.findall(text)
    if not found:
        return {}
    checkpoint, model = found[0][1], found[0][2]
    embedding = any(_numel(saved) and _EMBEDDING_PARAM.search(name + ".") for name, saved, _ in found)
    values = (float(_numel(checkpoint)), float(_numel(model)) if model else None, 1.0 if embedding else 0.0)
    return {name: v for name, v in zip(_SHAPE_FACTS, values) if v is not None}


# The signal a worker died of, as launchers report it: `exits with return code = -9` (DeepSpeed), `exitcode : -7`
# (torchrun), `Signal 9 (SIGKILL) received`, `<Signals.SIGKILL: 9>`, `killed by signal: Bus error` (DataLoader).
# It decides between causes that share a line: 9 is the kernel's OOM killer (host RAM), 7 a bus error (a full
# /dev/shm), 6 an abort (NCCL's watchdog).
# torchrun lists the other ranks first and the first observed failure last: that one counts when it is there.
_ROOT_FAILURE = re.compile(r"Root Cause \(first observed failure\)")
_EXIT_SIGNAL = re.compile(r"exits with return (?:code = )?-(\d{1,2})\b|exitcode\s*:\s*-(\d{1,2})\b"
                          r"|Signal (\d{1,2}) \(SIG[A-Z]+\)|<Signals\.SIG[A-Z]+: (\d{1,2})>")


_KILLED_BY = re.compile(r"killed by signal: (Killed|Bus error|Segmentation fault|Aborted|Floating point exception"
                        r"|Illegal instruction)")
"""PyTorch's DataLoader names the signal (`DataLoader worker (pid 3121) is killed by signal: Bus error.`)."""
_SIGNAL_NUMBERS = {"Killed": 9, "Bus error": 7, "Segmentation fault": 11, "Aborted": 6, "Floating point exception": 8,
                   "Illegal instruction": 4}
_SIGTERM = 15
"""Sent by someone else (a launcher stopping the other ranks, the scheduler, the parent exiting): a worker
that died of it says nothing about why the job failed, so it is no fact."""


def _exit_signal(text: str) -> dict[str, float]:
    root = _ROOT_FAILURE.search(text)
    for start in ((root.end(), 0) if root else (0,)):
        for m in _EXIT_SIGNAL.finditer(text, start):
            number = int(next(g for g in m.groups() if g))
            if number != _SIGTERM:
                return {"exit_signal": float(number)}
    named = _KILLED_BY.search(text) if "killed by signal" in text else None
    return {"exit_signal": float(_SIGNAL_NUMBERS[named.group(1)])} if named else {}


# `Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!`: two GPUs
# is a model split across cards (device_map="auto"), the CPU among them a tensor never moved to the GPU.
_SAME_DEVICE = re.compile(r"found at least two devices, (\w+)(?::\d+)? and (\w+)(?::\d+)?"
                          r"|but got \w+ is on (\w+)(?::\d+)?, different from other tensors on (\w+)")  # newer PyTorch
_GPU_DEVICES = frozenset({"cuda", "xpu", "npu", "hpu"})


def _devices(text: str) -> dict[str, float]:
    """`devices_all_gpu`: 1 when the devices a same-device error names are all GPUs, 0 when one is not."""
    m = _SAME_DEVICE.search(text) if "same device" in text else None
    return {"devices_all_gpu": float(all(d in _GPU_DEVICES for d in m.groups() if d))} if m else {}


# A GPU named by model (`RTX 5090 support - built from scratch`, `Kaggle 的 T4 上`, `4张A800`): its compute
# capability, when the paste states none. Short names (T4, L4, A10, …) count only beside NVIDIA/Tesla or a
# word that makes them a card (GPU, 显卡, 卡, -PCIE, -SXM), so `step T4` or `A40 paper size` are not GPUs.
_GPU_CC = {
    "K80": 3.7, "M40": 5.2, "M60": 5.2, "P100": 6.0, "P40": 6.1, "V100": 7.0, "V100S": 7.0, "T4": 7.5,
    "A100": 8.0, "A800": 8.0, "A30": 8.0,
    "A10": 8.6, "A10G": 8.6, "A40": 8.6, "A6000": 8.6, "L4": 8.9, "L20": 8.9, "L40": 8.9, "L40S": 8.9,
    "H100": 9.0, "H800": 9.0, "H20": 9.0, "H200": 9.0, "GH200": 9.0, "B200": 10.0,
}
_GPU_SERIES = {"10": 6.1, "16": 7.5, "20": 7.5, "30": 8.6, "40": 8.9, "50": 12.0}
_A0 = r"(?<![A-Za-z0-9])"  # word edges for ASCII names inside Chinese text (`4张A800`), where \b sees none
_Z0 = r"(?![A-Za-z0-9])"
_GPU_LONG = re.compile(_A0 + r"(K80|M40|M60|P100|V100S?|A100|A800|A6000|L40S|H100|H800|H200|GH200|B200)" + _Z0 + "|"
                       + _A0 + r"(?:RTX|GTX|GeForce)[ -]?(10|16|20|30|40|50)[5-9]0(?:[ -]?(?:Ti|SUPER))?" + _Z0)
_GPU_SHORT = re.compile(r"(?:NVIDIA|Tesla|nvidia)[ -](P40|T4|A10G?|A30|A40|L4|L20|L40|H20)" + _Z0 + "|"
                        + _A0 + r"(P40|T4|A10G?|A30|A40|L4|L20|L40|H20)(?=[ -]?(?:GPU|显卡|卡|上|-PCIE|-SXM|PCIe))")


def _gpu_capability(text: str) -> dict[str, float]:
    """The compute capability of the GPU the paste names, if it names one model (or several of one capability)."""
    found = {_GPU_CC[m.group(1)] if m.group(1) else _GPU_SERIES[m.group(2)] for m in _GPU_LONG.finditer(text)}
    found |= {_GPU_CC[m.group(1) or m.group(2)] for m in _GPU_SHORT.finditer(text)}
    return {"compute_capability": found.pop()} if len(found) == 1 else {}


# An AMD GPU named by its gfx target or by model: whether PyTorch's ROCm wheels carry kernels for it. The five
# targets below have been in every release since ROCm 5 (MI100, MI200, MI300, RX 6800-6950, RX 7900); consumer
# Radeon cards and APUs outside them (RX 5000, RX 6400-6750, 680M/780M, Strix) get `invalid device function`
# unless told to pass for a sibling. Targets whose inclusion changed between releases (gfx1101, gfx1200, …) give
# no value.
_ROCM_IN_WHEELS = frozenset({"gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"})
_ROCM_NOT_IN_WHEELS = frozenset({"gfx803", "gfx902", "gfx90c", "gfx1010", "gfx1011", "gfx1012", "gfx1031", "gfx1032",
                                 "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx1103", "gfx1150", "gfx1151"})
_GFX = re.compile(r"(?<![\w/])(gfx[0-9]{3,4}[a-f]?)(?![0-9a-z])")
_AMD_GPU = re.compile(r"(?<![A-Za-z0-9])(?:(MI(?:100|210|250X?|300[AX]?|325X))"
                      r"|(?:RX|Radeon)[ -]?(?:(6800|6900|6950|7900)|(5[5-7]00|6[4-7][05]0|4[78]0|5[78]0|[678][6-9]0M))"
                      r")(?![0-9])", re.I)


def _rocm_arch(text: str) -> dict[str, float]:
    """`rocm_gfx_in_wheels`: 1 when the AMD GPU the paste names is one PyTorch's ROCm wheels have kernels for,
    0 when it is one they lack; no value for a GPU the paste does not name or whose support changed."""
    m = _GFX.search(text) if "gfx" in text else None  # the device's own target first; a wheel's list is in file names
    if m:
        gfx = m.group(1).lower()
        known = gfx in _ROCM_IN_WHEELS or gfx in _ROCM_NOT_IN_WHEELS
        return {"rocm_gfx_in_wheels": float(gfx in _ROCM_IN_WHEELS)} if known else {}
    m = _AMD_GPU.search(text)
    if m:
        return {"rocm_gfx_in_wheels": 1.0 if m.group(1) or m.group(2) else 0.0}
    return {}


def extract_facts(text: str) -> dict[str, float]:
    """Typed values the paste states, in fixed units (GiB, seconds, compute capability as 8.6)."""
    facts: dict[str, float] = {}
    for name, patterns in _SIZE_FACTS.items():
        for rx in patterns:
            m = rx.search(text)
            if m:
                facts[name] = _gib(m.group(1), m.group(2))
                break
    for name, patterns in _NUMBER_FACTS.items():
        for rx in patterns:
            m = rx.search(text)
            if m:
                if name == "compute_capability":
                    facts[name] = float(f"{m.group(1)}.{m.group(2)}")
                elif name == "nccl_timeout_s":
                    facts[name] = int(m.group(1)) / 1000
                else:
                    facts[name] = float(m.group(1))
                break
    if "compute_capability" not in facts:  # a GPU named by model says more than a bare `sm_80` in a build list
        bare = _BARE_SM.search(text)
        facts.update(_gpu_capability(text) or ({"compute_capability": float(f"{bare.group(1)}.{bare.group(2)}")}
                                                if bare else {}))
    # Newer PyTorch prints reserved-but-unallocated; older prints reserved in total. One name for both.
    if "reserved_gib" not in facts and "allocated_gib" in facts and "unallocated_reserved_gib" in facts:
        facts["reserved_gib"] = facts["allocated_gib"] + facts["unallocated_reserved_gib"]
    if "unallocated_reserved_gib" not in facts and "reserved_gib" in facts and "allocated_gib" in facts:
        facts["unallocated_reserved_gib"] = max(0.0, facts["reserved_gib"] - facts["allocated_gib"])
    # What other processes hold: the GPU's used memory less this process's (its CUDA context included), or
    # less what PyTorch reserved when the paste does not say (older PyTorch, or a message cut short).
    own = facts.get("process_gib", facts.get("reserved_gib"))
    if own is not None and "total_gib" in facts and "free_gib" in facts:
        facts["others_gib"] = max(0.0, facts["total_gib"] - facts["free_gib"] - own)
    facts.update(_shape_facts(text))
    facts.update(_exit_signal(text))
    facts.update(_devices(text))
    facts.update(_rocm_arch(text))
    return facts


FACT_NAMES = frozenset(_SIZE_FACTS) | frozenset(_NUMBER_FACTS) | frozenset(_SHAPE_FACTS) | {
    "exit_signal", "others_gib", "devices_all_gpu", "rocm_gfx_in_wheels"}

_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


class _Unknown(Exception):
    """The paste has no value for a name the condition uses."""


def parse_condition(condition: str) -> ast.Expression:
    """Parse and vet an `applies_when` condition; raises KbError naming what is not allowed."""
    try:
        tree = ast.parse(condition, mode="eval")
    except SyntaxError as exc:
        raise KbError(f"applies_when: {condition!r} is not a condition ({exc.msg})") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in FACT_NAMES:
            raise KbError(f"applies_when: unknown value {node.id!r}; known: {', '.join(sorted(FACT_NAMES))}")
        if not isinstance(node, (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.Compare, ast.BinOp, ast.Name,
                                 ast.Constant, ast.Load, ast.UnaryOp, ast.USub, ast.Not,
                                 *_COMPARE, *_ARITH)):
            raise KbError(f"applies_when: {type(node).__name__} is not allowed in {condition!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise KbError(f"applies_when: only numbers are allowed in {condition!r}")
    return tree


def _eval(node: ast.AST, facts: dict[str, float]):
    if isinstance(node, ast.Expression):
        return _eval(node.body, facts)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in facts:
            raise _Unknown(node.id)
        return facts[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, facts)
        return -v if isinstance(node.op, ast.USub) else not v
    if isinstance(node, ast.BinOp):
        return _ARITH[type(node.op)](_eval(node.left, facts), _eval(node.right, facts))
    if isinstance(node, ast.BoolOp):
        values = []
        for v in node.values:  # an unknown side of `or` / `and` leaves the whole unknown unless the other decides
            try:
                values.append(bool(_eval(v, facts)))
            except _Unknown:
                values.append(None)
        if isinstance(node.op, ast.And):
            if False in values:
                return False
            if None in values:
                raise _Unknown("")
            return True
        if True in values:
            return True
        if None in values:
            raise _Unknown("")
        return False
    if isinstance(node, ast.Compare):
        left = _eval(node.left, facts)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, facts)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise _Unknown("")  # parse_condition() admits nothing else


def check(condition: ast.Expression | None, facts: dict[str, float]) -> int:
    """+1 the paste's values satisfy the article's condition, -1 they contradict it, 0 it cannot tell."""
    if condition is None or not facts:
        return 0
    try:
        return 1 if _eval(condition, facts) else -1
    except (_Unknown, ZeroDivisionError):
        return 0
