"""Out-of-fold grouping: a query and every article it names stay on one side of a split."""

from kb.calibrate import article_groups, folds


def test_articles_named_together_share_a_group_and_a_fold():
    relevant = [("a",), ("b", "a"), ("c",), ("d", "c", "e"), ("e",), ()]
    qids = ["q1", "q2", "q3", "q4", "q5", "q6"]
    groups = article_groups(relevant, qids)
    assert groups[0] == groups[1]  # q2 names a and b: both with q1
    assert groups[2] == groups[3] == groups[4]  # c, d, e joined through q4
    assert groups[0] != groups[2]
    assert groups[5] == "none:q6"  # an uncovered query is its own group
    fold = folds(groups)
    assert fold[0] == fold[1] and fold[2] == fold[3] == fold[4]
