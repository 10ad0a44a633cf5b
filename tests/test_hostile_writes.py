"""Hostile input, round two, in the core: nothing half-written, nothing that crashes a search."""

from __future__ import annotations

import json

import pytest

from kb.errors import ArticleError
from kb.service import KnowledgeBase

SURROGATE_ARTICLE = '---\nid: api-bad\ntitle: "broken \\ud800 title"\n---\n\nRuntimeError: broken\n'


def test_a_query_with_lone_surrogates_is_answered_and_the_answer_is_valid_utf8(kb):
    resp = kb.search("RuntimeError: CUDA error: \ud800 device-side assert triggered \udcff")
    body = json.dumps(resp.as_dict(), ensure_ascii=False).encode("utf-8")  # raises on a surrogate
    assert resp.results and b"\\ud800" not in body


def test_a_bad_api_write_leaves_no_file_and_no_article(kb):
    with pytest.raises(ArticleError, match="lone surrogate"):
        kb.add_article(SURROGATE_ARTICLE)
    assert not list(kb.data.articles_dir.glob("api-bad*")) if kb.data.articles_dir.exists() else True
    assert "api-bad" not in kb.searcher().list_ids()


def test_a_write_that_fails_while_building_leaves_no_file_and_the_old_index(kb, monkeypatch):
    before = sorted(kb.searcher().list_ids())
    good = "---\nid: api-good\ntitle: Good\n---\n\n## Error\n\nRuntimeError: good\n"

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("kb.build.Writer._build_indexes", crash)
    with pytest.raises(OSError):
        kb.add_article(good)
    assert not (kb.data.articles_dir / "api-good.md").exists()
    assert sorted(kb.searcher().list_ids()) == before
    assert not list((kb.settings.data_dir / "snapshots").glob(".building-*"))


def test_an_ingest_that_crashes_mid_build_leaves_no_building_dir(settings, corpus_copy, tokenizer, monkeypatch):
    base = KnowledgeBase(settings, tokenizer=tokenizer)

    def crash(*args, **kwargs):
        raise MemoryError("killed while encoding")

    monkeypatch.setattr("kb.build.Writer._build_indexes", crash)
    with pytest.raises(MemoryError):
        base.ingest([corpus_copy])
    assert not list((settings.data_dir / "snapshots").glob(".building-*"))
