"""Terminal output for the CLI: readable answers, colour on a tty, progress on stderr."""

from __future__ import annotations

import sys
import textwrap
import time

import click


def _style(text: str, **kw) -> str:
    return click.style(text, **kw) if sys.stdout.isatty() else text


def title(text: str) -> str:
    return _style(text, bold=True)


def confidence_words(confident: bool, confidence: float) -> str:
    if confident:
        return "confident match" if confidence >= 0.8 else "likely match"
    return "possible match" if confidence >= 0.25 else "weak match"


def _trim(text: str, lines: int) -> str:
    rows = text.strip().splitlines()
    if len(rows) <= lines:
        return "\n".join(rows)
    return "\n".join(rows[:lines]) + "\n…"


def answer(data: dict, full: bool = False) -> None:
    results = data.get("results", [])
    if not results:
        click.echo("No articles in the index matched. Try a different error line, or add an article.")
        return
    if not data.get("confident"):
        click.echo(_style("No confident answer: none of these articles clearly explains this error. Closest:", fg="yellow"))
    for i, r in enumerate(results, 1):
        words = confidence_words(data.get("confident", False) and i == 1, r.get("confidence", 0.0))
        click.echo(f"\n{_style(str(i) + '.', fg='cyan')} {title(r['title'])}  "
                   f"{_style('[' + r['article_id'] + ']', dim=True)}  {words} ({r['score']:.2f})")
        if r.get("matched_error"):
            click.echo(f"   matched: {_style(r['matched_error'][:200], fg='red')}")
        limit = 10_000 if full else (12 if i == 1 else 3)
        if r.get("root_cause"):
            click.echo(_style("   Root cause:", fg="magenta"))
            click.echo(textwrap.indent(_trim(r["root_cause"], limit), "     "))
        if r.get("fix"):
            click.echo(_style("   Fix:", fg="green"))
            click.echo(textwrap.indent(_trim(r["fix"], limit + 8 if i == 1 else limit), "     "))
        if not r.get("root_cause") and not r.get("fix"):
            click.echo(textwrap.indent(_trim(r.get("snippet", ""), 4), "     "))
        meta = ", ".join(r.get("tags", []))
        if r.get("source"):
            meta = f"{meta}  source: {r['source']}" if meta else f"source: {r['source']}"
        if meta:
            click.echo(_style(f"   {meta}", dim=True))
    if data.get("expanded_terms"):
        click.echo(_style(f"\nglossary terms used: {', '.join(data['expanded_terms'])}", dim=True))
    click.echo(_style("`kb show ID` prints a whole article.", dim=True))


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
        click.echo("\nconfidence, out of fold (cross-validation grouped by article; conf-acc above is too):")
        click.echo(f"  uncovered (`none`) queries not confident      {f(c['none_not_confident'])}")
        click.echo(f"  leave-article-out searches not confident      {f(c['lao_not_confident'])}")
        click.echo(f"  right top-1 answers that stay confident       {f(c['right_top1_confident'])}")
        click.echo(f"  precision of confident answers (dev set)      {f(c['precision_confident'])}")


def eval_misses(report) -> None:
    for o in report.outcomes:
        if o.query.relevant and o.rank == 1 and o.confident_right:
            continue
        if not o.query.relevant and o.confident_right:
            continue
        q = " ".join(o.query.query.split())[:90]
        click.echo(f"{o.query.qid} [{o.query.kind}] rank={o.rank} confident={o.confident} want={list(o.query.relevant)} got={o.ranked[:3]}  {q}")
