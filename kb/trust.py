"""Clues that tie a result to the query beyond its scores: platforms, exception names, prose, lead.

The searcher turns them into `Evidence` (kb/verdict.py), which the confidence model reads.
"""

from __future__ import annotations

import re

from .signature import Signature


ACCELERATOR_PLATFORMS = {
    "xla": ("xla", "tpu", "jax", "jaxlib", "flax"),
    "mps": ("mps", "metal"),
    "rocm": ("rocm", "hip", "rccl", "miopen", "amdgpu"),
    "npu": ("npu", "ascend", "cann", "hccl", "mindspore", "torch_npu"),
    "xpu": ("xpu", "ipex", "oneapi"),
    "hpu": ("hpu", "habana", "gaudi"),
    "maca": ("maca", "metax"),
    "mlu": ("mlu", "cambricon", "cnnl", "torch_mlu"),
    "musa": ("musa", "mthreads", "torch_musa"),
    "gcu": ("gcu", "enflame", "torch_gcu"),
    "iluvatar": ("iluvatar", "corex", "ixrt"),
}
"""Hardware other than NVIDIA's. Chinese users often train on domestic accelerators (MetaX MACA, Cambricon MLU,
Moore Threads MUSA, Enflame GCU, Iluvatar CoreX), whose stacks mimic CUDA's words and errors but not its causes."""
FRAMEWORK_PLATFORMS = {
    "tensorflow": ("tensorflow", "keras"),
    "paddle": ("paddle", "paddlepaddle"),
    "onnxruntime": ("onnxruntime", "onnx"),
    "tensorrt": ("tensorrt", "trtexec"),
    "openvino": ("openvino",),
}
"""Frameworks and runtimes other than PyTorch."""
PLATFORMS = {**ACCELERATOR_PLATFORMS, **FRAMEWORK_PLATFORMS}
"""Platforms and frameworks besides PyTorch on CUDA, each with the tokens that name it: a paste about
one that an article never names is an error from elsewhere that merely shares words."""
_PLATFORM_OF = {tok: name for name, toks in PLATFORMS.items() for tok in toks}
ACCELERATORS = frozenset(ACCELERATOR_PLATFORMS)
"""The PLATFORMS that are other hardware than NVIDIA's; the rest are other frameworks or runtimes than PyTorch."""


def home_platform(query_platforms) -> str:
    """What an article that names no platform is about, in the terms of the paste's: `cuda` next to another
    accelerator, `pytorch` next to another framework (every article is about PyTorch on NVIDIA GPUs)."""
    return "cuda" if set(query_platforms) & ACCELERATORS else "pytorch"


def platforms(tokens) -> frozenset[str]:
    return frozenset(_PLATFORM_OF[t] for t in tokens if t in _PLATFORM_OF)


NVIDIA = frozenset({"cuda", "nvidia"})
"""Words that put a paste on NVIDIA's hardware (a ROCm paste says `hip` or `rocm` beside `torch.cuda`)."""


def platform_clash(query_tokens, article_tokens, article_own_tokens) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(the paste's platforms, the article's) when they are not the same hardware or framework, else None.

    Either the paste names a platform the article never does (a TPU out-of-memory error and a CUDA article), or
    the article is about another accelerator (its title or tags, `article_own_tokens`, name MPS or ROCm) and the
    paste names CUDA or a third accelerator but not the article's: `CUDA error: invalid device function` is not
    answered by the article on ROCm's `HIP error: invalid device function`."""
    q = platforms(query_tokens)
    named = platforms(article_tokens)
    if q - named:
        return tuple(sorted(q)), tuple(sorted(named)) or (home_platform(q),)
    own = platforms(article_own_tokens) & ACCELERATORS
    if own and not q & own and (q & ACCELERATORS or not NVIDIA.isdisjoint(query_tokens)):
        return tuple(sorted(q)) or ("cuda",), tuple(sorted(own))
    return None


AGREEING_SIGNALS = ("lexical", "expansion", "bridge", "dense", "template", "calls")
RARE_WORDS = 8
"""How many of the query's rarest words `rare_share` looks at."""

_EXCEPTION_NAME = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Exit|Interrupt|Failure|Fault))\b")


def exception_names(lines) -> frozenset[str]:
    return frozenset(m for line in lines for m in _EXCEPTION_NAME.findall(line))


def short_exception(name: str | None) -> str | None:
    """`torch.cuda.OutOfMemoryError` -> `OutOfMemoryError`; None for no exception or a bare `Exception`."""
    if not name:
        return None
    short = re.split(r"\.|::", name)[-1]
    return short if short not in ("Exception", "Error") else None


_CODE_TOKEN = re.compile(
    r"\b[A-Za-z]+[_.][A-Za-z0-9_.]+\b|\b\w*(?:Error|Exception|Warning|error)\b\s*:|"
    r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)*(?:Error|Exception|Warning)\b|\b[A-Z]{2,}_[A-Z_]+\b|\b[A-Za-z]+=\S|"
    r"--[a-z][a-z-]+|\w+\(\)|`[^`]+`|Traceback|\b(?:DEBUG|INFO|ERROR|WARN(?:ING)?|FATAL|CRITICAL)\b"
)


def is_prose(sig: Signature, text: str) -> bool:
    """A question in words, with no exception, identifier or log line to match exactly."""
    return sig.exception is None and _CODE_TOKEN.search(text) is None


def lead(scored: list[tuple[float, int]]) -> float:
    """How far the top result stands ahead of the next, relative to its own score (0..1)."""
    if not scored or scored[0][0] <= 0:
        return 0.0
    nxt = scored[1][0] if len(scored) > 1 else 0.0
    return max(0.0, (scored[0][0] - nxt) / scored[0][0])


_SUBJECT = re.compile(
    r"(?:Failed building wheel for|Could not build wheels for|Building wheel for|Error building extension)"
    r"\s+['\"]?([A-Za-z0-9][\w.\-]*)"
    r"|No module named\s+['\"]?([\w.]+)"
    r"|cannot import name\s+['\"]?\w+['\"]?\s+from\s+['\"]?([\w.]+)"
    r"|unexpected keyword argument\s+['\"](?P<argument>\w+)"
    r"|has no attribute\s+['\"](?P<attribute>\w+)",
    re.I,
)


def subject(line: str | None) -> str | None:
    """The name an error line is about, normalised (`flash_attn` -> `flash-attn`): the package of "Could not build
    wheels for X", "No module named 'X.y'", "cannot import name 'n' from 'X'"; the argument of "got an unexpected
    keyword argument 'x'"; the attribute of "… has no attribute 'x'". Their fixed wording is most of such a line,
    so a line about another name still matches it nearly word for word."""
    m = _SUBJECT.search(line or "")
    if not m:
        return None
    code_name = m["argument"] or m["attribute"]
    if code_name:
        return code_name.lower()  # a name in code, as the user would search for it
    name = next(g for g in m.groups() if g)
    return name.split(".")[0].lower().replace("_", "-").strip("-'\"") or None


def mentions(tokens, name: str) -> bool:
    """Whether an article's tokens name a package, however it is spelt (`flash-attn`, `flash_attn`)."""
    parts = [p for p in re.split(r"[-_]", name) if p]
    return name in tokens or name.replace("-", "_") in tokens or (len(parts) > 1 and all(p in tokens for p in parts))
