"""`kb gaps`, `kb link`, `kb draft`: the knowledge loop from the terminal (kb/loop.py does the work)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from kb.errors import KbError
from kb.loop import parse_since

from . import render
from .options import data_dir_option, open_kb


@click.command()
@data_dir_option
@click.option("--since", default=None, metavar="AGE", help="Only searches this recent: 7d, 12h, 30m. Default: all kept.")
@click.option("--all", "include_linked", is_flag=True, help="Also list gaps already linked to an article.")
@click.option("-n", "limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="How many gaps.")
@click.option("--json", "as_json", is_flag=True, help="Print the gaps as JSON (for scripts).")
def gaps(data_dir, since, include_linked, limit, as_json):
    """Errors users searched for that no article answered, most-hit first.

    Searches with verdict `none` or `maybe`, or with a 👎, grouped by their masked
    error line (the same line is the same gap). Only masked lines are ever kept,
    never the pastes. Close a gap with `kb link GAP ARTICLE` or start an article
    with `kb draft GAP`.

    \b
    Examples:
      kb gaps --since 7d
      kb gaps --json | jq '.gaps[0].example'
    """
    try:
        found = open_kb(data_dir).gaps(parse_since(since), include_linked, limit)
    except KbError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps({"gaps": [g.as_dict() for g in found]}, ensure_ascii=False, indent=2))
        return
    if not found:
        click.echo("No gaps: every recorded search got an answer (or nothing was recorded yet).")
        return
    for g in found:
        ago = _age(time.time() - g.last_seen)
        votes = f", 👎 {g.unhelpful}" if g.unhelpful else ""
        linked = f", linked to {g.linked_to}" if g.linked_to else ""
        click.echo(render.title(g.gap_id) + f"  {g.count} search(es), {g.users} user(s){votes}, last {ago} ago "
                   f"via {', '.join(g.doors)}{linked}")
        click.echo(f"  {g.example}")
        if g.closest:
            click.echo(f"  closest: {', '.join(g.closest)}")
    click.echo("\nAnswer one: kb link GAP_ID ARTICLE_ID    Start an article: kb draft GAP_ID")


@click.command()
@click.argument("gap_id")
@click.argument("article_id")
@data_dir_option
def link(gap_id, article_id, data_dir):
    """Confirm that ARTICLE_ID answers GAP_ID.

    The gap's masked error line is added to the article's `error_lines` front
    matter (in its own file, so the link survives a re-ingest and shows up in
    review) and the article is re-indexed: the next such paste gets that article.
    """
    try:
        path = open_kb(data_dir).link_gap(gap_id, article_id)
    except KbError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"Linked {gap_id} to {article_id}: {path} now lists the error line; the index is updated.")


@click.command()
@click.argument("gap_id")
@data_dir_option
@click.option("--dir", "folder", default="corpus/drafts", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Folder to write the draft into.")
def draft(gap_id, data_dir, folder):
    """Write a new article skeleton for GAP_ID, ready to fill in.

    It carries the gap's error line and the symptom / error / root cause / fix
    headings in both languages, and `draft: true`, so `kb ingest` skips it (and
    says so) until you have written it and deleted that line.
    """
    try:
        path = open_kb(data_dir).draft_gap(gap_id, folder)
    except KbError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"Wrote {path}: fill in the root cause and fix, delete `draft: true`, then `kb ingest {folder}`.")


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
