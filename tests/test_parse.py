"""Sections, their kinds, and chunks: what the root cause / fix fields are built from."""

from __future__ import annotations

from kb.chunk import chunk_sections
from kb.parse import CAUSE, ERROR, FIX, SUMMARY, SYMPTOM, classify_heading, parse_sections, section_text


def test_heading_wordings_in_both_languages():
    cases = {
        "问题现象": SYMPTOM, "现象描述": SYMPTOM, "报错信息": ERROR, "问题原因探究": CAUSE, "原因分析": CAUSE,
        "根本原因": CAUSE, "解决方案": FIX, "解决方法": FIX, "处理步骤": FIX, "最佳实践建议": FIX,
        "Symptom": SYMPTOM, "Error message": ERROR, "Why": CAUSE, "Root cause": CAUSE, "Fix": FIX,
        "Solution": FIX, "Workaround": FIX, "What finally worked": FIX, "Traceback": ERROR,
        "In English": SUMMARY, "中文摘要": SUMMARY,
    }
    for heading, kind in cases.items():
        assert classify_heading(heading) == kind, heading


def test_sections_keep_heading_path_and_code():
    md = "# Title\n\n## Fix\n\n### Option A\n\nRun this:\n\n```bash\nexport NCCL_P2P_DISABLE=1\n```\n\n## Why\n\nACS.\n"
    sections = parse_sections(md, "Title")
    fix = [s for s in sections if s.kind == FIX]
    assert fix[0].heading_path == ("Option A",) or fix[0].heading_path[-1] == "Option A"
    assert "```bash\nexport NCCL_P2P_DISABLE=1\n```" in section_text(sections, FIX)
    assert section_text(sections, CAUSE) == "ACS."


def test_summary_in_the_other_language_stays_out_of_cause_and_fix():
    md = ("# 标题\n\n## 原因分析\n\n显存碎片。\n\n## 解决方案\n\n设置 `expandable_segments`。\n\n"
          "## In English\n\nTraining dies with an OOM because the cache is fragmented; the fix is to set expandable segments.\n")
    sections = parse_sections(md, "标题")
    assert section_text(sections, CAUSE) == "显存碎片。"
    assert section_text(sections, FIX) == "设置 `expandable_segments`。"
    assert "cache is fragmented" in section_text(sections, SUMMARY)


def test_headless_article_is_classified_by_content():
    md = (
        "Training dies at the first eval step.\n\n```text\ntorch.OutOfMemoryError: CUDA out of memory.\n```\n\n"
        "The cause is that logits pile up on the GPU.\n\nTo fix it, set eval_accumulation_steps.\n"
    )
    sections = parse_sections(md)
    assert "logits pile up" in section_text(sections, CAUSE)
    assert "eval_accumulation_steps" in section_text(sections, FIX)
    assert any(s.kind == ERROR for s in sections)


def test_chinese_headless_article():
    md = "批量推理报错。\n\n原因是分词器没有 pad token。\n\n解决办法是复用 eos：\n\n```python\ntok.pad_token = tok.eos_token\n```\n"
    sections = parse_sections(md)
    assert "pad token" in section_text(sections, CAUSE)
    fix = section_text(sections, FIX)
    assert "复用 eos" in fix and "tok.pad_token = tok.eos_token" in fix


def test_code_blocks_are_never_split():
    code = "```text\n" + "\n".join(f"line {i} of a long log" for i in range(200)) + "\n```"
    md = f"## Error\n\n{code}\n\nafter\n"
    chunks = chunk_sections(parse_sections(md), max_chars=300)
    assert any(c.text == code for c in chunks)
    assert all(c.text.count("```") % 2 == 0 for c in chunks)
