"""Terminal output for the CLI: readable answers, colour on a tty, progress on stderr."""

from __future__ import annotations

import functools
import sys
import textwrap
import time

import click


def _style(text: str, **kw) -> str:
    return click.style(text, **kw) if sys.stdout.isatty() else text


def title(text: str) -> str:
    return _style(text, bold=True)


ADD_HINT = ("Add one: write a Markdown article (see corpus/AUTHORING.md) and run `kb ingest FILE`, "
            "or POST it to /v1/articles.")


def verdict_of(data: dict) -> tuple[str, str]:
    """(verdict, reason) as the core decided them; a server too old to send a verdict only has `confident`."""
    verdict = data.get("verdict")
    if verdict not in ("answer", "maybe", "none"):
        verdict = "answer" if data.get("confident") else "maybe"
    return verdict, (data.get("reason") or "").strip()


def verdict_header(verdict: str, reason: str) -> str:
    """The first line of an answer: the core's verdict and its reason, in words."""
    if verdict == "answer":
        return f"Answer (confident): {reason}" if reason else "Answer (confident)"
    if verdict == "maybe":
        return f"Possible match — check it against your error: {reason}" if reason else "Possible match — check it against your error"
    return (f"No article in the knowledge base covers this error ({reason})." if reason
            else "No article in the knowledge base covers this error.")


def result_label(verdict: str, index: int) -> str:
    """What a result is: the verdict names the top one; every other result is only related."""
    if index > 1:
        return "related"
    return {"answer": "answer", "maybe": "possible match"}.get(verdict, "related, not a match")


def percent(confidence) -> str:
    try:
        return f"{round(float(confidence) * 100)}%"
    except (TypeError, ValueError):
        return "?%"


def _trim(text: str, lines: int) -> str:
    rows = text.strip().splitlines()
    if len(rows) <= lines:
        return "\n".join(rows)
    return "\n".join(rows[:lines]) + "\n…"


def answer(data: dict, full: bool = False, err: bool = False) -> None:
    """Render the core's verdict (`verdict`, `reason`) and the results; no thresholds of our own.
    `err`: on stderr (`kb run`, `kb watch`: stdout belongs to the command or the log)."""
    echo = functools.partial(click.echo, err=err)
    results = data.get("results", [])
    verdict, reason = verdict_of(data)
    colour = {"answer": "green", "maybe": "yellow"}.get(verdict, "red")
    echo(_style(verdict_header(verdict, reason), fg=colour, bold=True))
    if verdict == "none" and results:
        echo(_style("Related, not a match:", fg="yellow"))
    for i, r in enumerate(results, 1):
        label = result_label(verdict, i)
        echo(f"\n{_style(str(i) + '.', fg='cyan')} {title(r['title'])}  "
                   f"{_style('[' + r['article_id'] + ']', dim=True)}  {label} · {percent(r.get('confidence', 0.0))}")
        if r.get("matched_error"):
            echo(f"   matched: {_style(r['matched_error'][:200], fg='red')}")
        lead = i == 1 and verdict != "none"
        limit = 10_000 if full else (12 if lead else 3)
        if r.get("root_cause"):
            echo(_style("   Root cause:", fg="magenta"))
            echo(textwrap.indent(_trim(r["root_cause"], limit), "     "))
        # a fix is shown for what may be the answer; for a related article it is one `kb show` away
        if r.get("fix") and (lead or full):
            echo(_style("   Fix:", fg="green"))
            echo(textwrap.indent(_trim(r["fix"], limit + 8 if lead else limit), "     "))
        if not r.get("root_cause") and not (r.get("fix") and (lead or full)):
            echo(textwrap.indent(_trim(r.get("snippet", ""), 4), "     "))
        meta = ", ".join(r.get("tags", []))
        if r.get("source"):
            meta = f"{meta}  source: {r['source']}" if meta else f"source: {r['source']}"
        if meta:
            echo(_style(f"   {meta}", dim=True))
    if data.get("expanded_terms"):
        echo(_style(f"\nglossary terms used: {', '.join(data['expanded_terms'])}", dim=True))
    if results:
        echo(_style("`kb show ID` prints a whole article.", dim=True))
    if verdict == "none":
        echo(ADD_HINT)


def rule(text: str) -> str:
    """A dim separator line that says where kb's own output starts."""
    return _style(f"── {text} " + "─" * max(3, 60 - len(text)), dim=True)


class Progress:
    """progress(stage, done, total) -> one redrawn stderr line, only when it is a terminal or the run is long."""

    def __init__(self):
        self.tty = sys.stderr.isatty()
        self.last = 0.0
        self.started = time.monotonic()
        self.open = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < 0.2:
            return
        self.last = now
        width = 30
        filled = int(width * done / total) if total else width
        line = f"{stage:>7} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
        if self.tty:
            click.echo("\r" + line, nl=False, err=True)
            self.open = True
        elif done == total or now - self.started > 5:
            click.echo(line, err=True)

    def close(self) -> None:
        if self.open:
            click.echo("", err=True)


def ingest_report(report, data_dir) -> None:
    for exc in report.failed:
        click.echo(_style(f"skipped {exc}", fg="red"), err=True)
    if not report.changed and report.snapshot is None:
        click.echo(f"Nothing to do: {report.unchanged} articles unchanged in {data_dir}.")
        return
    click.echo(
        f"Indexed into {data_dir}: {len(report.added)} added, {len(report.updated)} updated, "
        f"{len(report.removed)} removed, {report.unchanged} unchanged, {len(report.failed)} failed "
        f"({report.encoded_chunks} chunks encoded, {report.seconds:.1f}s)."
    )


def eval_table(report) -> None:
    def f(v):
        return "  -  " if v is None else f"{v:.3f}"

    click.echo(f"{'kind':<10} {'n':>4} {'R@1':>6} {'R@5':>6} {'MRR':>6} {'conf-acc':>8} {'p50 ms':>7} {'p95 ms':>7}")
    for k in [*report.per_kind, report.overall]:
        click.echo(f"{k.kind:<10} {k.n:>4} {f(k.recall_at_1):>6} {f(k.recall_at_5):>6} {f(k.mrr):>6} "
                   f"{k.confident_accuracy:>8.3f} {k.p50_ms:>7.1f} {k.p95_ms:>7.1f}")
    c = report.confidence
    if c:
        click.echo(f"\nconfidence, out of fold (cross-validation grouped by article; conf-acc above is too), "
                   f"mean of {c['deals']} deals of articles into folds (range):")
        for name, label in (("none_not_confident", "uncovered (`none`) queries not confident"),
                            ("lao_not_confident", "leave-article-out searches not confident"),
                            ("right_top1_confident", "right top-1 answers that stay confident"),
                            ("precision_confident", "precision of confident answers (dev set)")):
            low, high = c["range"][name]
            click.echo(f"  {label:<46}{f(c[name])}  ({low:.3f}-{high:.3f})")


def eval_misses(report) -> None:
    for o in report.outcomes:
        if o.query.relevant and o.rank == 1 and o.confident_right:
            continue
        if not o.query.relevant and o.confident_right:
            continue
        q = " ".join(o.query.query.split())[:90]
        click.echo(f"{o.query.qid} [{o.query.kind}] rank={o.rank} confident={o.confident} want={list(o.query.relevant)} got={o.ranked[:3]}  {q}")
