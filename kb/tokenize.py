"""Tokens for lexical search: code-aware for English, jieba for Chinese prose.

Identifiers and error names stay whole (`torch.cuda.OutOfMemoryError`, `ds_opt_adam`,
`NCCL_P2P_DISABLE`) and also yield their parts, so a query that spells the words out
("out of memory") still meets the identifier. They are taken out with a regex before
jieba sees the text, since jieba would split them.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from .text import HAN_RUN

Segmenter = Callable[[str], Iterable[str]]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|/|-)[A-Za-z0-9_]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SEP = re.compile(r"\.|::|/|-|_")
_GPU_MODEL = re.compile(r"(?<![A-Za-z0-9_.:/-])(?<!line )((?:10[5-8]|20[5-8]|30[5-9]|40[6-9]|50[6-9])0)(?:ti|d|s)?(?![A-Za-z0-9_:/-]|\.\w)", re.I)
"""A GeForce model number (1080, 2080, 3090, 4090, 5090, 4090D, 3090Ti). Numbers are volatile and no token,
but these name the hardware, which decides causes: no bf16 before Ampere, no working P2P on consumer cards."""

EN_STOP = frozenset(
    "a an the is are was were be been being of to in on at by for with from as and or but if then "
    "this that these those it its i you we they he she my your our their me us them do does did "
    "have has had can could should would will shall may might must so such than too very just "
    "what which who whom when where why how all any each some no nor only own same other into "
    "out over under again further once here there about above below up down off also get got "
    "use used using s t".split()
)
ZH_STOP = frozenset(
    "的 了 是 在 和 与 及 或 我 你 他 她 它 我们 你们 他们 这 那 这个 那个 这些 那些 一个 一些 "
    "就 也 都 还 又 再 很 非常 比较 吗 呢 吧 啊 呀 哦 嗯 么 怎么 怎样 如何 什么 为什么 哪 哪里 "
    "有 没有 被 把 让 给 对 从 向 到 为 以 而 但 但是 如果 因为 所以 然后 可以 可能 会 能 要 "
    "想 需要 一下 一直 已经 时候 时 后 之后 之前 中 上 下 里 等 等等 请问 请 求 大佬 各位 谢谢".split()
)


def jieba_segmenter() -> Segmenter:
    """jieba in search mode (whole words plus their sub-words), loaded once and quietly."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.cut_for_search


class Tokenizer:
    """Text -> lowercase tokens. The Chinese segmenter is passed in (tests may use a simple one)."""

    def __init__(self, segmenter: Segmenter | None = None):
        self._segmenter = segmenter

    @property
    def segmenter(self) -> Segmenter:
        if self._segmenter is None:
            self._segmenter = jieba_segmenter()
        return self._segmenter

    def __call__(self, text: str) -> list[str]:
        tokens: list[str] = []
        for m in _IDENT.finditer(text):
            tokens.extend(identifier_tokens(m.group()))
        tokens.extend(m.group(1) for m in _GPU_MODEL.finditer(text))
        for run in HAN_RUN.findall(text):
            for word in self.segmenter(run):
                word = word.strip()
                if word and word not in ZH_STOP:
                    tokens.append(word)
        return tokens


def identifier_tokens(ident: str) -> list[str]:
    """`torch.cuda.OutOfMemoryError` -> whole, its dotted parts, and camel-case words."""
    whole = ident.strip("-./_:")
    if not whole:
        return []
    low = whole.lower()
    out: list[str] = []
    parts = [p for p in _SEP.split(whole) if p]
    if low not in EN_STOP and not low.isdigit():
        out.append(low)
    if len(parts) > 1 or any(c.isupper() for c in whole[1:]):
        for part in parts:
            words = _CAMEL.findall(part) if any(c.isupper() for c in part[1:]) else [part]
            candidates = ([part] if len(parts) > 1 else []) + (words if len(words) > 1 else [])
            for w in candidates:
                wl = w.lower()
                if len(wl) > 1 and wl not in EN_STOP and not wl.isdigit() and wl != low:
                    out.append(wl)
    return out
