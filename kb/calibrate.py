"""Fit the confidence model, and measure it honestly: out of fold, grouped by article.

Rows come from the eval queries as search really answers them:
- every query: the top result's evidence, labelled right (1) when it is a relevant article;
- every covered query again with its relevant article(s) left out (`exclude`): the top
  result is then the closest look-alike that does NOT answer it, the hardest realistic
  negative ("leave-article-out", kind `lao`). In real use most pastes are not covered.

Cross-validation is grouped by article: a query, its leave-article-out twin and every
other query about the same article sit in the same fold, and so does every article a query
names as relevant together with everything those articles answer (`article_groups`), so no
figure is measured on an article the model saw. Thresholds are chosen inside each training
fold too, on that fold's own out-of-fold probabilities (`held_out_probabilities`). Only the
out-of-fold figures are reported, averaged over several deals of articles into folds; the
shipped model is then fitted on all rows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from .verdict import MODEL_FEATURES, SIGNS, Evidence, verdict_kind

FOLDS = 5
DEALS = 5
"""How many deals of articles into folds the reported figures average over: with ~250 confident
answers, one more wrong one moves precision by 0.004, and a single deal can be lucky or not."""
HEADLINE = ("none_not_confident", "lao_not_confident", "right_top1_confident", "precision_confident")
L2 = 0.001
INNER_DEAL = 100
"""Added to a deal's seed for the folds inside its training part (`held_out_probabilities`)."""
FALSE_ANSWER_COST = 2.0
"""A confident wrong answer sends a user down the wrong path: it costs this many missed right ones.
Checked on the real pastes (corpus/eval/real_pastes.jsonl, which no threshold is fitted on): with 303 of them
(2026-11-26), the model at 2.0 answers 101 covered pastes rightly, 3 wrongly and 5 uncovered ones, against
90 / 3 / 4 at 2.5: 11 more right answers for 1 more false one. With 233 pastes it was 10 more right for 4 more
false, and 2.5 was kept then."""

RIGHT_CONFIDENT_GOAL = 0.90
LAO_FLOOR = 0.80
PRECISION_FLOOR = 0.97
"""The operating point issue #15 asks for: at least 0.90 of right top answers confident, while at least 0.80
of look-alikes are not and at least 0.97 of confident answers are right. The cost rule alone (below) answers
less than that when the right answers it would add sit just under its cut. On the real pastes and the
held-out files, which no threshold is fitted on, the cut this gives (0.42, 2026-11-28) and the cost rule's
(0.49) weigh the same by that cost: 363 right, 5 wrong and 22 uncovered answered against 347 / 2 / 19 on the
829 real pastes, 168 / 6 / 32 against 162 / 5 / 29 on the held-out files."""

LAO_WEIGHT = 0.35
"""How much a leave-article-out row counts when the answer threshold is chosen (every other row counts 1).
The dev set has one look-alike per covered query, each the hardest negative there is; real use has fewer
and easier ones. On the 373 real pastes (2026-11-26) there are 0.58 uncovered pastes per covered one, and at
p >= 0.5 a look-alike is answered about twice as often as a real uncovered paste (14% against 7%): about
0.3 of a real false answer per row. At 0.3 one deal of articles into folds drops precision to 0.962;
0.35 keeps every deal at 0.973 or above. The real pastes at the refit threshold (0.60 -> 0.50): 139 right
answers instead of 121, 3 wrong instead of 2, 10 uncovered answered instead of 7."""


@dataclass
class Row:
    qid: str
    kind: str
    """The query's kind, or `lao` for a leave-article-out search."""
    relevant: tuple[str, ...]
    """The query's relevant articles (empty: uncovered); they decide the row's fold."""
    right: bool
    evidence: Evidence | None
    """Top result's evidence; None when nothing matched at all."""


def row(query, kind: str, response) -> Row:
    """One search's top result as a training row (`kind`: the query's, or `lao`)."""
    top = response.results[0] if response.results else None
    return Row(query.qid, kind, tuple(query.relevant), bool(top and top.article_id in query.relevant),
               top.evidence if top else None)


def article_groups(relevant_sets: list[tuple[str, ...]], qids: list[str]) -> list[str]:
    """A group per query: the connected set of articles it belongs to, where two articles are
    connected when one query names both as relevant; `none:<qid>` for an uncovered query.

    Why: a query with two relevant articles ties them together; grouping by its first one alone
    would let the second sit in a training fold while the query is tested."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for rel in relevant_sets:
        for a in rel[1:]:
            parent[find(a)] = find(rel[0])
    return [find(rel[0]) if rel else f"none:{qid}" for rel, qid in zip(relevant_sets, qids)]


def _kinds(rows: list[Row]) -> np.ndarray:
    return np.array([r.kind for r in rows])


def _groups(rows: list[Row]) -> list[str]:
    return article_groups([r.relevant for r in rows], [r.qid for r in rows])


def features(rows: list[Row]) -> np.ndarray:
    return np.array([r.evidence.model_row() if r.evidence else [0.0] * len(MODEL_FEATURES) for r in rows])


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2, steps: int = 50) -> np.ndarray:
    """L2-regularised logistic regression by Newton's method: [bias, coef...]."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    reg = l2 * np.eye(xb.shape[1])
    reg[0, 0] = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(xb @ w, -50, 50)))
        grad = xb.T @ (p - y) / len(y) + reg @ w
        hess = (xb.T * (p * (1 - p))) @ xb / len(y) + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def fit_signed(x: np.ndarray, y: np.ndarray, signs: list[int], l2: float = L2) -> np.ndarray:
    """Logistic regression whose coefficients keep the given signs (0: free): refit without any
    feature whose weight comes out the wrong way, until none does."""
    active = list(range(x.shape[1]))
    while True:
        w = fit_logistic(x[:, active], y, l2)
        wrong = [j for j, c in zip(active, w[1:]) if signs[j] * c < 0]
        if not wrong:
            full = np.zeros(x.shape[1] + 1)
            full[0] = w[0]
            full[[j + 1 for j in active]] = w[1:]
            return full
        worst = max(wrong, key=lambda j: -signs[j] * w[1 + active.index(j)])
        active.remove(worst)


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(w[0] + x @ w[1:], -50, 50)))


def choose_thresholds(p: np.ndarray, y: np.ndarray, kinds: np.ndarray) -> tuple[float, float]:
    """(answer_at, maybe_at) on training rows (`kinds`: each row's query kind, `lao` for a look-alike).

    answer_at: the fewest missed right answers plus FALSE_ANSWER_COST per confident wrong one (a
    look-alike row counting LAO_WEIGHT), unless that keeps fewer than RIGHT_CONFIDENT_GOAL of the right
    answers confident: then the highest cut that keeps that many, if LAO_FLOOR and PRECISION_FLOOR hold
    there. The least cost that meets the goal; the cost rule's cut when the goal is out of reach.
    maybe_at: below the cost rule's cut, the cut that best separates right (maybe) from wrong (none); the
    goal turns some `maybe`s into answers, never a `maybe` into a `none`.
    """
    weight = np.where(kinds == "lao", LAO_WEIGHT, 1.0)
    grid = np.round(np.arange(0.05, 0.96, 0.01), 2)
    cost = [(weight * ((p < t) & (y == 1))).sum() + FALSE_ANSWER_COST * (weight * ((p >= t) & (y == 0))).sum()
            for t in grid]
    answer_at = float(grid[int(np.argmin(cost))])
    below = p < answer_at
    best, maybe_at = -1.0, answer_at
    for t in grid[grid < answer_at]:
        acc = (weight * (((p >= t) == (y == 1)) & below)).sum()
        if acc > best:
            best, maybe_at = acc, float(t)
    goal = _goal_cut(p, y, kinds, grid)
    if goal is not None and goal < answer_at:  # more answers; where `none` starts stays where it was
        answer_at, maybe_at = goal, min(maybe_at, goal)
    return answer_at, maybe_at


def _goal_cut(p: np.ndarray, y: np.ndarray, kinds: np.ndarray, grid: np.ndarray) -> float | None:
    """The highest cut keeping RIGHT_CONFIDENT_GOAL of the right answers confident; None when the
    look-alike or precision floor fails there (the goal is not worth those false answers)."""
    dev, lao = kinds != "lao", kinds == "lao"
    right = dev & (y == 1)
    if not right.any():
        return None
    for t in grid[::-1]:
        confident = p >= t
        if confident[right].mean() < RIGHT_CONFIDENT_GOAL:
            continue
        lao_ok = not lao.any() or (~confident[lao]).mean() >= LAO_FLOOR
        answered = dev & confident
        return float(t) if lao_ok and y[answered].mean() >= PRECISION_FLOOR else None
    return None


def held_out_probabilities(x: np.ndarray, y: np.ndarray, groups: list[str], signs: list[int], seed: int = 0
                           ) -> np.ndarray:
    """Each row's probability from a model fitted without its fold, grouped by article as the figures are.

    Why: the thresholds are chosen on these. A model is surer of the rows it was fitted on than of an
    article it never saw, so a cut chosen on its in-sample probabilities sits where unseen articles' right
    answers are too few. `seed` offsets the deal (INNER_DEAL), so the folds are not the caller's."""
    fold = folds(groups, seed=seed + INNER_DEAL)
    p = np.full(len(y), float(y.mean()) if len(y) else 0.0)
    for f in range(FOLDS):
        train, test = fold != f, fold == f
        if test.any() and len(set(y[train])) == 2:
            p[test] = predict(fit_signed(x[train], y[train], signs), x[test])
    return p


def _fit_and_cut(x: np.ndarray, y: np.ndarray, groups: list[str], kinds: np.ndarray, signs: list[int],
                 seed: int = 0) -> tuple[np.ndarray, float, float]:
    """Coefficients fitted on these rows, and (answer_at, maybe_at) chosen on their own out-of-fold
    probabilities: what the shipped model is, and what each fold's model is when it is measured."""
    w = fit_signed(x, y, signs)
    answer_at, maybe_at = choose_thresholds(held_out_probabilities(x, y, groups, signs, seed), y, kinds)
    return w, answer_at, maybe_at


def folds(groups: list[str], k: int = FOLDS, seed: int = 0) -> np.ndarray:
    """A fold number per row, the same for every row of a group (stable: by a hash of the group;
    another `seed` deals the groups out differently)."""
    salt = f"#{seed}" if seed else ""
    return np.array([int(hashlib.sha256((g + salt).encode()).hexdigest(), 16) % k for g in groups])


@dataclass
class Fitted:
    coef: np.ndarray
    answer_at: float
    maybe_at: float
    reference: np.ndarray


def fit(rows: list[Row]) -> Fitted:
    x, y = features(rows), np.array([r.right for r in rows], dtype=float)
    w, answer_at, maybe_at = _fit_and_cut(x, y, _groups(rows), _kinds(rows), [SIGNS.get(n, 0) for n in MODEL_FEATURES])
    reference = x[y == 1].mean(axis=0) if (y == 1).any() else np.zeros(x.shape[1])
    return Fitted(w, answer_at, maybe_at, reference)


def out_of_fold(rows: list[Row], drop: frozenset[str] = frozenset(), seed: int = 0) -> list[str]:
    """The verdict each row gets from a model fitted without its fold. `drop`: features switched off
    (ablation); `seed`: another deal of articles into folds (how much the figures owe to the deal)."""
    x, y = features(rows), np.array([r.right for r in rows], dtype=float)
    keep = [i for i, n in enumerate(MODEL_FEATURES) if n not in drop]
    x = x[:, keep]
    groups = _groups(rows)
    fold = folds(groups, seed=seed)
    kinds = _kinds(rows)
    signs = [SIGNS.get(MODEL_FEATURES[j], 0) for j in keep]
    verdicts = [""] * len(rows)
    for f in range(FOLDS):
        train, test = fold != f, fold == f
        if not test.any() or len(set(y[train])) < 2:
            continue
        w, answer_at, maybe_at = _fit_and_cut(x[train], y[train], [g for g, t in zip(groups, train) if t],
                                              kinds[train], signs, seed)
        p = predict(w, x[test])
        for i, pi in zip(np.nonzero(test)[0], p):
            ev = rows[i].evidence
            verdicts[i] = "none" if ev is None else verdict_kind(pi, answer_at, maybe_at, ev)
    return verdicts


def measure(rows: list[Row], drop: frozenset[str] = frozenset(), deals: int = DEALS) -> tuple[list[str], dict]:
    """The first deal's verdicts, and the figures averaged over `deals` deals into folds, with the
    range of each headline figure across them (conf-acc per kind is the first deal's)."""
    verdicts = [out_of_fold(rows, drop, seed=s) for s in range(deals)]
    each = [figures(rows, v) for v in verdicts]
    out = dict(each[0])
    for name in (*HEADLINE, "none_verdict_none", "confident_accuracy"):
        values = [f[name] for f in each if f[name] is not None]
        out[name] = round(sum(values) / len(values), 4) if values else None
    out["range"] = {name: [min(f[name] or 0.0 for f in each), max(f[name] or 0.0 for f in each)] for name in HEADLINE}
    out["deals"] = deals
    return verdicts[0], out


def figures(rows: list[Row], verdicts: list[str]) -> dict:
    """The out-of-fold figures the trust issue asks for, plus confident-accuracy per kind."""
    pairs = list(zip(rows, verdicts))

    def share(pred, sel) -> float | None:
        picked = [(r, v) for r, v in pairs if sel(r, v)]
        return round(sum(pred(r, v) for r, v in picked) / len(picked), 4) if picked else None

    def dev(r: Row) -> bool:  # the dev set as it stands: covered + none queries
        return r.kind != "lao"

    out = {
        "none_not_confident": share(lambda r, v: v != "answer", lambda r, v: r.kind == "none"),
        "none_verdict_none": share(lambda r, v: v == "none", lambda r, v: r.kind == "none"),
        "lao_not_confident": share(lambda r, v: v != "answer", lambda r, v: r.kind == "lao"),
        "right_top1_confident": share(lambda r, v: v == "answer", lambda r, v: dev(r) and r.right),
        "precision_confident": share(lambda r, v: r.right, lambda r, v: dev(r) and v == "answer"),
        "confident_accuracy": share(lambda r, v: (v == "answer") == r.right, lambda r, v: dev(r)),
        "rows": len(rows),
    }
    out["confident_accuracy_by_kind"] = {
        k: share(lambda r, v: (v == "answer") == r.right, lambda r, v, k=k: r.kind == k)
        for k in sorted({r.kind for r in rows})
    }
    return out
