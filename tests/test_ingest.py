"""Ingest as a user meets it: idempotent, replaces changed files, prunes, reports bad files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import DATA, cli_env
from kb.errors import IndexMismatchError
from kb.ingest import parse_document
from kb.scraped import clean_scraped_page
from kb.service import KnowledgeBase
from kb.store import DataDir, Manifest


def test_second_ingest_does_no_work(kb, corpus_copy):
    report = kb.ingest([corpus_copy])
    assert not report.changed and report.snapshot is None
    assert report.unchanged == 5 and report.encoded_chunks == 0


def test_an_upgrade_that_reads_articles_differently_rereads_them_without_reencoding(kb, corpus_copy, monkeypatch):
    """A new kb whose parser finds other error lines must not keep the old index's templates for files
    that did not change; their chunk text did not change either, so nothing is encoded again."""
    from kb import ingest as reading

    monkeypatch.setattr(reading, "_PIPELINE_FINGERPRINT", b"another version of the parser")
    report = kb.ingest([corpus_copy])
    assert len(report.updated) == 5 and report.unchanged == 0 and report.encoded_chunks == 0


def test_edited_article_replaces_only_itself(kb, corpus_copy):
    before = kb.get_article("nccl-p2p-hang")
    path = corpus_copy / "nccl-p2p-hang.md"
    path.write_text(path.read_text().replace("turn ACS off in the BIOS", "disable ACS with setpci"))
    report = kb.ingest([corpus_copy])
    assert report.updated == ["nccl-p2p-hang"] and not report.added and report.unchanged == 4
    after = kb.get_article("nccl-p2p-hang")
    assert "setpci" in after["fix"] and "setpci" not in before["fix"]
    hits = kb.search("disable ACS with setpci").results
    assert hits[0].article_id == "nccl-p2p-hang"


def test_prune_removes_articles_whose_files_are_gone(kb, corpus_copy):
    (corpus_copy / "cuda-oom-eval.md").unlink()
    assert kb.ingest([corpus_copy]).removed == []  # without --prune nothing is removed
    report = kb.ingest([corpus_copy], prune=True)
    assert report.removed == ["cuda-oom-eval"]
    assert "cuda-oom-eval" not in kb.searcher().list_ids()


def test_bad_files_are_reported_and_skipped(settings, tokenizer):
    base = KnowledgeBase(settings, tokenizer=tokenizer)
    report = base.ingest([DATA / "broken"])
    assert report.added == ["good-article"]
    reasons = {e.path.rsplit("/", 1)[-1]: str(e) for e in report.failed}
    assert set(reasons) == {"bad-front-matter.md", "latin1.md", "empty.md"}
    assert "line 3" in reasons["bad-front-matter.md"] and "front matter" in reasons["bad-front-matter.md"]
    assert "UTF-8" in reasons["latin1.md"] and "line 1" in reasons["latin1.md"]
    assert "empty" in reasons["empty.md"]


def test_cli_ingest_exit_code_and_messages(tmp_path):
    env = cli_env(tmp_path / "data")
    proc = subprocess.run([sys.executable, "-m", "kb_cli", "ingest", str(DATA / "broken")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert "bad-front-matter.md: line 3" in proc.stderr
    assert "1 added" in proc.stdout


def test_scraped_page_junk_is_never_indexed(kb):
    article = kb.get_article("torch-ext-cache-hang")
    assert article["title"] == "DeepSpeed 训练卡在 torch_extensions 不动的解决办法"
    for junk in ("登录后查看全文", "热门项目推荐", "星河大模型", "1.2 K", "作者"):
        assert junk not in article["body"]
    assert "rm -rf /root/.cache/torch_extensions/" in article["fix"]
    assert "锁文件" in article["root_cause"]
    top = kb.search("星河大模型 多模态 图文理解").results
    assert not top or top[0].article_id != "torch-ext-cache-hang" or top[0].evidence.lexical == 0


def test_seed_pages_lose_their_junk():
    for seed in sorted((DATA.parent.parent.parent / "shared" / "seeds").glob("*.txt")) or []:
        page = clean_scraped_page(seed.read_text())
        for junk in ("登录后查看全文", "热门项目推荐", "项目优选", "Python00", "\n26\n"):
            assert junk not in page.markdown, (seed.name, junk)
        assert len(page.markdown) > 800


def test_front_matter_fields_and_unknown_keys():
    doc = parse_document(b"---\nid: a1\ntitle: T\nlang: en\ntags: [x, y]\nversions: '1.2'\n---\n# T\n\ntext\n", "a.md")
    assert (doc.id, doc.title, doc.lang, doc.tags, doc.meta) == ("a1", "T", "en", ("x", "y"), {"versions": "1.2"})
    doc = parse_document("# 标题在这里\n\n没有 front matter 的中文文章。\n".encode(), "dir/my-note.md")
    assert (doc.id, doc.title, doc.lang) == ("my-note", "标题在这里", "zh")


def test_model_mismatch_is_a_clear_error(kb, settings, tokenizer):
    other = KnowledgeBase(type(settings)(data_dir=settings.data_dir, embed_model="hash-64"), tokenizer=tokenizer)
    with pytest.raises(IndexMismatchError, match="re-ingest"):
        other.search("NCCL timeout")


def test_format_version_mismatch_is_a_clear_error(kb, settings, tokenizer):
    live = DataDir(settings.data_dir).current()
    data = json.loads((live / "manifest.json").read_text())
    data["format_version"] = 999
    (live / "manifest.json").write_text(json.dumps(data))
    fresh = KnowledgeBase(settings, tokenizer=tokenizer)
    with pytest.raises(IndexMismatchError, match="--rebuild"):
        fresh.search("NCCL timeout")


def test_rebuild_switches_model(kb, corpus_copy, settings, tokenizer):
    other = KnowledgeBase(type(settings)(data_dir=settings.data_dir, embed_model="hash-64"), tokenizer=tokenizer)
    report = other.ingest([corpus_copy], rebuild=True)
    assert report.encoded_chunks > 0
    assert Manifest.read(DataDir(settings.data_dir).current() / "manifest.json").model_id == "hash-64"
    assert other.search("NCCL watchdog timeout").results[0].article_id == "nccl-p2p-hang"


def test_duplicate_ids_in_one_batch(tmp_path, settings, tokenizer):
    folder = tmp_path / "dups"
    folder.mkdir()
    shutil.copy(DATA / "corpus" / "nccl-p2p-hang.md", folder / "a.md")
    shutil.copy(DATA / "corpus" / "nccl-p2p-hang.md", folder / "b.md")
    report = KnowledgeBase(settings, tokenizer=tokenizer).ingest([folder])
    assert report.added == ["nccl-p2p-hang"]
    assert len(report.failed) == 1 and "already used by" in str(report.failed[0])
