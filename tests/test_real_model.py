"""A few end-to-end checks with the real bundled embedding model (slow: loads torch and the weights)."""

from __future__ import annotations

import pytest

from kb.config import DEFAULT_EMBED_MODEL, Settings
from kb.service import KnowledgeBase

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def real_kb(tmp_path_factory):
    from conftest import FIXTURE_CORPUS

    kb = KnowledgeBase(Settings(data_dir=tmp_path_factory.mktemp("real") / "data"))
    report = kb.ingest([FIXTURE_CORPUS])
    assert not report.failed and report.encoded_chunks > 0
    return kb


def test_index_records_the_default_model(real_kb):
    assert real_kb.stats()["model_id"] == DEFAULT_EMBED_MODEL


def test_real_model_ranks_pasted_errors(real_kb):
    top = real_kb.search("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.20 GiB during trainer.evaluate()")
    assert top.results[0].article_id == "cuda-oom-eval" and top.results[0].evidence.dense > 0.3


def test_cross_lingual_question_without_shared_error_text(real_kb):
    # An English article, a Chinese question that shares no error string with it.
    resp = real_kb.search("多卡训练第一次同步梯度就卡死，十分钟后被看门狗杀掉，机器是 PCIe 的")
    assert resp.results[0].article_id == "nccl-p2p-hang"
    assert resp.expanded_terms
