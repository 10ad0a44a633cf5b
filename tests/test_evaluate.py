"""`kb eval`'s arithmetic on a real (fixture) index: what a user reads off the table must be true."""

from __future__ import annotations

import json

import pytest

from kb.errors import KbError
from kb.evaluate import EvalQuery, QueryOutcome, figures, load_queries, run

COVERED = [
    EvalQuery("q1", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.20 GiB during evaluate()", ("cuda-oom-eval",), "short_en"),
    EvalQuery("q2", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600012 milliseconds", ("nccl-p2p-hang",), "short_en"),
    EvalQuery("q3", "Invalidate trace cache @ step 12: expected module 4, but got module 88", ("zero3-trace-cache",), "short_en"),
]
UNCOVERED = EvalQuery("n1", "npm ERR! code ERESOLVE unable to resolve dependency tree while resolving react@18.2.0", (), "none")


def test_load_queries_names_the_bad_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"qid": "a", "query": "x", "relevant": ["r"], "kind": "zh"}) + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(KbError, match=r"line 3: not an eval query"):
        load_queries(path)
    path.write_text(json.dumps({"qid": 7, "query": "x"}) + "\n", encoding="utf-8")
    (q,) = load_queries(path)
    assert q == EvalQuery("7", "x", (), "other")  # no `relevant`: uncovered; no `kind`: "other"


def test_rank_and_recall_follow_the_ranking():
    q = EvalQuery("q", "x", ("b", "c"), "zh")
    outcomes = [
        QueryOutcome(q, ["b", "a"], confident=True, ms=1.0),   # rank 1, confident: right
        QueryOutcome(q, ["a", "c"], confident=True, ms=2.0),   # rank 2, confident: wrong
        QueryOutcome(q, ["a", "d"], confident=False, ms=3.0),  # not found, not confident: right
    ]
    assert [o.rank for o in outcomes] == [1, 2, None]
    f = figures("zh", outcomes)
    assert (f.n, f.recall_at_1, f.recall_at_5) == (3, pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert f.mrr == pytest.approx((1 + 0.5 + 0) / 3)
    assert f.confident_accuracy == pytest.approx(2 / 3)
    assert f.p50_ms == 2.0


def test_uncovered_queries_have_no_recall_and_count_only_when_not_confident():
    none = EvalQuery("n", "x", (), "none")
    f = figures("none", [QueryOutcome(none, ["a"], confident=False, ms=1.0), QueryOutcome(none, ["a"], confident=True, ms=1.0)])
    assert f.recall_at_1 is None and f.mrr is None
    assert f.confident_accuracy == 0.5


def test_run_on_a_real_index_searches_each_covered_query_again_without_its_article(kb):
    searcher = kb.searcher()
    seen_excludes: list[frozenset] = []

    def search(query, k, exclude=frozenset()):
        seen_excludes.append(frozenset(exclude))
        return searcher.search(query, top_k=k, exclude=exclude)

    report = run([*COVERED, UNCOVERED], search)
    assert report.overall.recall_at_1 == 1.0  # each exact error line finds its article
    by_kind = {k.kind: k for k in report.per_kind}
    assert by_kind["short_en"].n == 3 and by_kind["none"].recall_at_1 is None
    # One search per query, and one more per covered query with its relevant articles left out.
    assert sorted(e for e in seen_excludes if e) == sorted(frozenset(q.relevant) for q in COVERED)
    assert [r.kind for r in report.rows].count("lao") == len(COVERED)
    assert all(not r.right for r in report.rows if r.kind == "lao")  # the look-alike never answers
    # The trust figures are the out-of-fold ones, and every outcome was judged by them.
    assert set(report.confidence) >= {"none_not_confident", "lao_not_confident", "right_top1_confident", "precision_confident"}
    assert all(o.oof_confident is not None for o in report.outcomes)
