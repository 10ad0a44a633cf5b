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


PASTED_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.20 GiB during trainer.evaluate()"


def test_real_model_ranks_pasted_errors(real_kb):
    top = real_kb.search(PASTED_OOM)
    assert top.results[0].article_id == "cuda-oom-eval"
    # The exact error line decides on its own, so the model was not consulted; asked anyway,
    # it agrees (a real similarity, the same top result).
    assert top.results[0].evidence.dense is None
    searcher = real_kb.searcher()
    full = searcher.gather(PASTED_OOM, always_dense=True)
    best = searcher.rank(full, searcher.weights)[0][1]
    assert searcher.articles[best].id == "cuda-oom-eval"
    assert searcher.evidence(full, best).dense > 0.3


def test_real_model_decides_between_close_articles(real_kb):
    # Two articles are about as close lexically: the model is consulted and weighs in.
    resp = real_kb.search("evaluation out of memory and NCCL hang")
    assert resp.results[0].article_id == "cuda-oom-eval"
    assert resp.results[0].evidence.dense is not None and resp.results[0].evidence.dense > 0.3


def test_cross_lingual_question_without_shared_error_text(real_kb):
    # An English article, a Chinese question that shares no error string with it.
    resp = real_kb.search("多卡训练第一次同步梯度就卡死，十分钟后被看门狗杀掉，机器是 PCIe 的")
    assert resp.results[0].article_id == "nccl-p2p-hang"
    assert resp.expanded_terms


def test_onnx_runtime_gives_the_torch_models_vectors_and_falls_back_to_torch(tmp_path, monkeypatch):
    """The bundled model runs on onnxruntime for speed; its vectors are torch's, so an index built
    either way serves the other, and a machine without onnxruntime still answers."""
    import numpy as np

    from kb.embed import OnnxMiniLMEncoder, SentenceTransformerEncoder, _packaged_minilm

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # export afresh, not from an earlier cache
    texts = ["RuntimeError: CUDA error: device-side assert triggered", "训练时显存不够 OOM", "a" * 3000]
    onnx = OnnxMiniLMEncoder(DEFAULT_EMBED_MODEL, _packaged_minilm())
    torch_vectors = SentenceTransformerEncoder(DEFAULT_EMBED_MODEL, _packaged_minilm()).encode(texts)
    onnx_vectors = onnx.encode(texts)
    assert onnx._session is not None and list((tmp_path / "kb" / "onnx").glob("*.onnx"))
    assert (onnx_vectors * torch_vectors).sum(axis=1).min() > 0.99999

    broken = OnnxMiniLMEncoder(DEFAULT_EMBED_MODEL, _packaged_minilm())
    monkeypatch.setattr(OnnxMiniLMEncoder, "_open_session", lambda self, model: (_ for _ in ()).throw(ImportError("no onnxruntime")))
    assert np.allclose(broken.encode(texts), torch_vectors, atol=1e-6) and broken._session is None
