"""Tests for kb.glossary: the bundled zh<->en glossary and its matcher.

Cross-lingual retrieval depends on this file being well-formed and on the matcher
firing the right entries, so the data file is tested as strictly as the code.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb.glossary import (
    DEFAULT_PATH,
    Expansion,
    Glossary,
    GlossaryEntry,
    GlossaryError,
    load_glossary,
)

HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

# Terms deliberately listed in two entries because they have two senses.
# Anything else appearing twice should be merged into one entry.
DUAL_SENSE = {
    ("zh", "卸载"),  # offload (卸载到CPU) / uninstall (pip卸载)
    ("en", "freeze"),  # training hangs / frozen parameters
}


@pytest.fixture(scope="module")
def glossary() -> Glossary:
    return load_glossary()


def _norm(term: str) -> str:
    """How the matcher identifies a term: case-folded, separators ignored."""
    return re.sub(r"[\s_-]+", "", term.lower())


def _entry_with(g: Glossary, side: str, term: str) -> GlossaryEntry:
    matches = [e for e in g.entries if term in getattr(e, side)]
    assert len(matches) == 1, f"{side} term {term!r} should be in exactly one entry"
    return matches[0]


def _added(exp: Expansion) -> str:
    return " " + exp.added_text + " "


# -- the bundled data file -------------------------------------------------------------


def test_bundled_glossary_loads_with_enough_entries(glossary: Glossary) -> None:
    assert DEFAULT_PATH.is_file()
    assert len(glossary.entries) >= 400
    assert len(glossary) == len(glossary.entries)


def test_bundled_file_starts_with_format_comments() -> None:
    first = DEFAULT_PATH.read_text(encoding="utf-8").split("\n", 1)[0]
    assert first.startswith("#")


def test_bundled_entries_are_well_formed(glossary: Glossary) -> None:
    for entry in glossary.entries:
        assert entry.zh and entry.en, entry
        for term in entry.zh + entry.en:
            assert term and term == term.strip(), entry
            assert "|" not in term and "\t" not in term, entry
        for term in entry.zh:
            assert HAN.search(term), f"line {entry.line}: zh term {term!r} has no Chinese"
        for term in entry.en:
            assert term.isascii(), f"line {entry.line}: en term {term!r} is not ASCII"
        assert len({t.lower() for t in entry.zh}) == len(entry.zh), entry
        assert len({t.lower() for t in entry.en}) == len(entry.en), entry


def test_bundled_entries_are_unique(glossary: Glossary) -> None:
    signatures = [
        (frozenset(t.lower() for t in e.zh), frozenset(t.lower() for t in e.en))
        for e in glossary.entries
    ]
    assert len(set(signatures)) == len(signatures)


def test_terms_are_shared_between_entries_only_for_listed_dual_senses(glossary: Glossary) -> None:
    where: dict[tuple[str, str], set[int]] = defaultdict(set)
    for entry in glossary.entries:
        for side in ("zh", "en"):
            for term in getattr(entry, side):
                where[(side, _norm(term))].add(entry.line)
    shared = {key for key, lines in where.items() if len(lines) > 1}
    assert shared == DUAL_SENSE


def test_bundled_glossary_covers_requested_vocabulary(glossary: Glossary) -> None:
    zh_terms = {t for e in glossary.entries for t in e.zh}
    en_terms = {t.lower() for e in glossary.entries for t in e.en}
    for term in [
        "显存", "共享内存", "算力", "报错", "卡住", "超时", "泄漏", "越来越慢", "不收敛",
        "无法导入", "版本不匹配", "编译失败", "梯度累积", "梯度检查点", "优化器状态",
        "损失为NaN", "混合精度", "低秩适配", "断点续训", "卸载", "张量并行", "流水线并行",
        "集合通信", "进程组", "主节点", "防火墙", "网卡", "分词器", "截断", "填充", "批大小",
        "键值缓存", "上下文长度", "量化", "重复生成", "显存利用率", "预分配", "即时编译",
        "图中断", "重新编译", "缓存目录", "环境变量", "驱动", "工具包", "容器", "镜像",
        "虚拟环境", "动态库", "符号", "头文件", "权限", "评估模式", "反向传播", "推理模式",
        "奖励模型", "参考模型", "策略模型", "价值模型", "强化学习", "爆显存", "显存炸了",
        "OOM了", "跑不起来", "卡在", "一直等待", "没有输出", "报错了", "装不上", "起不来",
    ]:
        assert term in zh_terms, term
    for term in ["oom", "out of memory", "hang", "stuck", "deadlock", "slow", "kv cache",
                 "tp", "dp", "pp", "lora", "ckpt"]:
        assert term in en_terms, term


# -- matching and expansion -----------------------------------------------------------


def test_chinese_question_fires_hang_and_memory(glossary: Glossary) -> None:
    exp = glossary.expand("训练卡住了，显存也爆了")
    assert "卡住" in exp.fired
    assert "显存" in exp.fired or "爆显存" in exp.fired
    assert " hang " in _added(exp)
    assert " GPU memory " in _added(exp)
    assert not HAN.search(exp.added_text), "a Chinese query should gain English terms"


def test_english_question_gains_chinese_terms(glossary: Glossary) -> None:
    exp = glossary.expand("NCCL hang on multi-node")
    assert exp.fired[:3] == ("NCCL", "hang", "multi-node")
    assert " 卡住 " in _added(exp)
    assert " 多机 " in _added(exp)


def test_english_matching_is_case_insensitive(glossary: Glossary) -> None:
    oom = _entry_with(glossary, "en", "OOM")
    assert any(entry is oom for _, entry in glossary.match("RuntimeError: CUDA Out Of Memory"))
    assert "爆显存" in glossary.expand("cuda OOM again").added_text


def test_english_terms_need_word_boundaries(glossary: Glossary) -> None:
    fired = glossary.expand("please change the room layout, a hangar or zoom").fired
    assert "hang" not in fired and "OOM" not in fired
    # A Han character is a boundary too: users glue English to Chinese.
    assert "OOM" in glossary.expand("显存不足，又OOM").fired


def test_chinese_terms_match_as_substrings(glossary: Glossary) -> None:
    fired = glossary.expand("为什么我的训练卡住不动").fired
    assert "卡住" in fired and "不动了" not in fired
    assert glossary.expand("一直卡住").fired == ("一直卡",)  # longer overlapping synonym wins
    # ASCII edges of mixed terms still respect English word boundaries.
    assert "OOM了" in glossary.expand("又oom了").fired
    assert "OOM了" not in glossary.expand("BOOM了").fired


def test_longest_match_wins(glossary: Glossary) -> None:
    assert glossary.expand("开了梯度检查点").fired == ("梯度检查点",)
    assert glossary.expand("torch.OutOfMemoryError: CUDA out of memory.").fired == (
        "OutOfMemoryError",
        "CUDA out of memory",
    )
    assert glossary.expand("多机多卡训练").fired == ("多机多卡", "训练")


def test_separator_and_plural_variants(glossary: Glossary) -> None:
    for text in ["kv cache", "KV-Cache", "kv_cache", "KVCache"]:
        assert glossary.expand(text).fired == ("KV cache",), text
    assert "checkpoint" in glossary.expand("all checkpoints were saved").fired
    assert "-100" in glossary.expand("labels are set to -100").fired
    assert "-100" not in glossary.expand("trained for 100 steps").fired


def test_fired_terms_are_in_order_of_appearance_and_unique(glossary: Glossary) -> None:
    exp = glossary.expand("deadlock then timeout then deadlock again, 超时")
    assert exp.fired == ("deadlock", "timeout", "超时")


def test_added_text_skips_terms_already_in_text(glossary: Glossary) -> None:
    exp = glossary.expand("显存不足 CUDA out of memory")
    added = _added(exp)
    assert " out of memory " not in added and " CUDA out of memory " not in added
    assert " 显存不足 " not in added
    assert added.startswith(" OOM ")  # synonyms not present yet are added
    # Two terms of one entry in the text: its synonyms are still added only once.
    twice = _added(glossary.expand("显存不足，爆显存，显存溢出"))
    assert twice.count(" OutOfMemoryError ") == 1


def test_dual_sense_term_fires_both_entries(glossary: Glossary) -> None:
    entries = [entry for term, entry in glossary.match("怎么卸载") if term == "卸载"]
    assert len(entries) == 2
    added = _added(glossary.expand("怎么卸载"))
    assert " offload " in added and " uninstall " in added


def test_match_returns_terms_with_their_entries(glossary: Glossary) -> None:
    pairs = glossary.match("梯度累积 and gradient accumulation")
    assert [term for term, _ in pairs] == ["梯度累积", "gradient accumulation"]
    assert pairs[0][1] is pairs[1][1]


def test_no_match_and_empty_text(glossary: Glossary) -> None:
    assert glossary.match("") == []
    assert glossary.expand("") == Expansion(fired=(), added_text="")
    assert glossary.expand("lorem ipsum dolor sit amet").fired == ()


def test_expand_of_a_2kb_text_does_not_crash(glossary: Glossary) -> None:
    block = (
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.39 GiB.\n"
        "  File \"/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py\", line 1976\n"
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE)\n"
        "训练到一半显存爆了，多机多卡的时候NCCL超时，loss也变成nan了。\n"
    )
    text = (block * 20)[:2048]
    assert len(text) == 2048
    exp = glossary.expand(text)
    assert {"CUDA out of memory", "NCCL超时", "多机多卡"} <= set(exp.fired)
    assert exp.added_text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("显存卡住爆了OOMoom hang-_ 。，\nkvcache训练NCCL多机")), max_size=80))
def test_expand_is_total_and_consistent(text: str) -> None:
    g = _GLOSSARY
    exp = g.expand(text)
    all_terms = {t for e in g.entries for t in e.zh + e.en}
    assert set(exp.fired) <= all_terms
    assert len(exp.fired) == len(set(exp.fired))
    assert [t for t, _ in g.match(text)] == [t for t, _ in g.match(text)]  # deterministic


_GLOSSARY = load_glossary()


# -- malformed files --------------------------------------------------------------------

GOOD = "# comment\n显存|GPU显存\tGPU memory|VRAM\n\n卡住\thang|stuck\n"


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("显存不足\tOOM\textra", "tab-separated"),
        ("只有一列", "tab-separated"),
        ("显存||显卡\tVRAM", "empty term"),
        ("显存|\tVRAM", "empty term"),
        ("卡住\thang|", "empty term"),
        ("GPU|显存\tVRAM", "no Chinese characters"),
        ("显存\tVRAM|显卡", "contains Chinese characters"),
        ("显存\tVRAM|vram", "duplicate en term"),
        ("显存|显存\tVRAM", "duplicate zh term"),
        ("卡住\thang|stuck", "duplicate entry (same as line 4)"),
        ("显存\tcafé", "not ASCII"),
    ],
)
def test_malformed_line_raises_with_file_and_line(tmp_path: Path, bad_line: str, message: str) -> None:
    path = tmp_path / "glossary.tsv"
    path.write_text(GOOD + bad_line + "\n", encoding="utf-8")
    with pytest.raises(GlossaryError) as info:
        load_glossary(path)
    assert f"{path}:5:" in str(info.value)
    assert message in str(info.value)
    assert info.value.line == 5 and info.value.path == str(path)


def test_good_file_with_comments_blank_lines_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "g.tsv"
    path.write_bytes(GOOD.replace("\n", "\r\n").encode("utf-8"))
    g = load_glossary(path)
    assert [e.line for e in g.entries] == [2, 4]
    assert g.entries[0] == GlossaryEntry(zh=("显存", "GPU显存"), en=("GPU memory", "VRAM"), line=2)
    assert g.expand("the job is stuck").added_text == "卡住"


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "g.tsv"
    path.write_bytes(GOOD.encode("utf-8") + b"\xff\xfe\tbad\n")
    with pytest.raises(GlossaryError, match=r":5: not valid UTF-8"):
        load_glossary(path)


def test_glossary_error_is_a_value_error() -> None:
    assert issubclass(GlossaryError, ValueError)
