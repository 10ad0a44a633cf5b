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


def _rows(right_p, wrong_p, lao_p):
    import numpy as np
    p = np.array([*right_p, *wrong_p, *lao_p])
    y = np.array([1.0] * len(right_p) + [0.0] * (len(wrong_p) + len(lao_p)))
    kinds = np.array(["traceback"] * (len(right_p) + len(wrong_p)) + ["lao"] * len(lao_p))
    return p, y, kinds


def test_the_answer_cut_drops_to_keep_the_goal_share_of_right_answers_confident():
    """The cost rule alone would leave the right answers at 0.45 unanswered (one false answer costs two
    missed right ones, and the look-alikes sit there too); the goal keeps 0.90 of right answers confident."""
    from kb.calibrate import choose_thresholds
    p, y, kinds = _rows([0.9] * 80 + [0.45] * 12 + [0.2] * 8, [0.2] * 10, [0.45] * 20 + [0.1] * 80)
    answer_at, maybe_at = choose_thresholds(p, y, kinds)
    assert answer_at == 0.45  # the cost rule alone: 0.46
    assert (p[y == 1] >= answer_at).mean() >= 0.90
    assert maybe_at <= answer_at


def test_the_goal_is_not_bought_with_look_alikes():
    """When keeping 0.90 of right answers confident would answer more than 0.20 of the look-alikes,
    the cost rule's cut stays."""
    from kb.calibrate import choose_thresholds
    p, y, kinds = _rows([0.9] * 80 + [0.45] * 12 + [0.2] * 8, [0.2] * 10, [0.45] * 40 + [0.1] * 60)
    answer_at, _ = choose_thresholds(p, y, kinds)
    assert answer_at > 0.45


def test_a_groups_probability_comes_from_a_model_that_never_saw_it():
    """The cut is chosen on these probabilities: a group (an article and its queries) must not vouch for itself.
    Group `odd` is the only one whose rows with x=1 are right; a model that saw it would call them likely."""
    import numpy as np
    from kb.calibrate import fit_signed, held_out_probabilities, predict
    groups = [f"g{i}" for i in range(40) for _ in range(5)] + ["odd"] * 30
    x = np.array([[1.0] if i % 5 == 0 else [0.0] for i in range(200)] + [[1.0]] * 30)
    y = np.array([0.0 if i % 5 == 0 else 1.0 for i in range(200)] + [1.0] * 30)
    held_out = held_out_probabilities(x, y, groups, [0])
    in_sample = predict(fit_signed(x, y, [0]), x)
    assert held_out[-30:].max() < in_sample[-30:].min()
