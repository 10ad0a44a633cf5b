"""The `kb` command: a thin shell over `kb.KnowledgeBase` (no retrieval logic here)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from kb.config import MAX_QUERY_BYTES
from kb.errors import KbError
from kb.text import clean, decode, tail

from . import render
from .loop import draft, gaps, link
from .mcp_server import mcp_command
from .run import run
from .watch import watch
from .options import data_dir_option, open_kb

_kb = open_kb


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="kb")
def cli() -> None:
    """kb: paste an ML training or serving error, get the root cause and the fix.

    \b
    Typical use:
      kb ingest corpus/                      build the index from the bundled articles
      kb search "NCCL timeout in allreduce"  ask with a one-liner
      python train.py 2>&1 | tail -80 | kb search   paste a traceback on stdin
      kb serve                               HTTP API and web page on 127.0.0.1:8000
      kb eval corpus/eval/queries.jsonl      measure retrieval quality

    Environment: KB_DATA_DIR (index location), KB_EMBED_MODEL (embedding model:
    'all-MiniLM-L6-v2' bundled, a local sentence-transformers directory, or 'hash'),
    KB_URL (make `kb search` ask a running `kb serve` instead of loading the index).
    """


def _write(quiet: bool, write):
    """Run a write with a progress bar on stderr (unless `quiet`); a KbError becomes a CLI error."""
    progress = None if quiet else render.Progress()
    try:
        return write(progress)
    except KbError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if progress:
            progress.close()


def _say_waiting(message: str) -> None:
    click.echo(message, err=True)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@data_dir_option
@click.option("--prune", is_flag=True, help="Remove articles whose files no longer exist.")
@click.option("--rebuild", is_flag=True, help="Re-index every article (e.g. after changing KB_EMBED_MODEL).")
@click.option("--no-wait", is_flag=True, help="Exit at once if another ingest holds the data dir, instead of waiting.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def ingest(paths, data_dir, prune, rebuild, no_wait, as_json, quiet):
    """Add or update articles from files and folders (.md, .markdown, .txt).

    Unchanged files are skipped (by content hash), a changed file replaces its old
    version, and a bad file is reported as `path: line: reason` and skipped. The
    exit code is 1 when some file failed. The previous index stays live until the
    new one is complete, so searches keep working and a crash loses nothing.

    \b
    Examples:
      kb ingest corpus/
      kb ingest notes/new-article.md --data-dir /srv/kb
      kb ingest corpus/ --prune        # also drop articles whose files were deleted
    """
    kb = _kb(data_dir)
    report = _write(quiet or as_json, lambda progress: kb.ingest(
        list(paths), prune=prune, rebuild=rebuild, progress=progress,
        wait=0 if no_wait else None, on_wait=_say_waiting,
    ))
    if as_json:
        click.echo(json.dumps(report.as_dict(), ensure_ascii=False, indent=2))
    else:
        render.ingest_report(report, kb.settings.data_dir)
    if report.failed:
        sys.exit(1)


@cli.command()
@data_dir_option
@click.option("--no-wait", is_flag=True, help="Exit at once if another writer holds the data dir, instead of waiting.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def compact(data_dir, no_wait, as_json, quiet):
    """Fold the index's delta segments into one.

    A write of a few articles (`POST /v1/articles`, `kb ingest` of a changed file,
    `kb link`) adds a small delta segment instead of rebuilding the index, so it
    costs time in proportion to those articles. Each segment adds a little to every
    search; after 16 of them the next write folds them on its own. Run this after a
    burst of edits, or from cron. Searches keep working while it runs, and rank the
    same afterwards.

    \b
    Examples:
      kb compact
      kb compact --data-dir /srv/kb --json
    """
    kb = _kb(data_dir)
    before = _write(True, lambda progress: kb.stats()["segments"])
    report = _write(quiet or as_json, lambda progress: kb.compact(
        progress=progress, wait=0 if no_wait else None, on_wait=_say_waiting))
    if as_json:
        click.echo(json.dumps({"segments_before": before, "segments": kb.stats()["segments"], **report.as_dict()},
                              ensure_ascii=False, indent=2))
    elif report.snapshot:
        click.echo(f"Folded {before} segments into one in {kb.settings.data_dir} ({report.seconds:.1f}s).")
    else:
        click.echo(f"Nothing to fold: the index in {kb.settings.data_dir} is one segment.")


@cli.command()
@click.argument("query", required=False)
@data_dir_option
@click.option("-k", "top_k", default=5, show_default=True, type=click.IntRange(1, 50), help="How many articles.")
@click.option("--json", "as_json", is_flag=True, help="Print the full answer as JSON (for scripts).")
@click.option("--url", envvar="KB_URL", default=None, help="Ask a running `kb serve` at this URL (env KB_URL).")
@click.option("--full", is_flag=True, help="Show the whole root cause and fix, not a trimmed view.")
def search(query, data_dir, top_k, as_json, url, full):
    """Find the articles that explain an error.

    QUERY is an error line, a question, or `-`/nothing to read a paste from stdin
    (a whole traceback or log is fine: kb picks out the signal lines and masks
    volatile numbers, paths and ranks itself).

    \b
    Examples:
      kb search "RuntimeError: CUDA error: no kernel image is available for execution on the device"
      kb search "训练卡在 Using /root/.cache/torch_extensions 不动了"
      kb search < traceback.txt
      kb search --json -k 3 "NCCL watchdog timeout" | jq '.results[0].fix'
    """
    if query in (None, "-"):
        if sys.stdin.isatty():
            click.echo("Paste the error, then press Ctrl-D:", err=True)
        query = decode(sys.stdin.buffer.read())  # terminal logs hold stray bytes: U+FFFD, not a crash
        query, cut = tail(query, MAX_QUERY_BYTES)
        if cut:
            click.echo(f"kb: the paste is longer than {MAX_QUERY_BYTES // 1024} KB; answering from its last "
                       f"{MAX_QUERY_BYTES // 1024} KB, where the final error is.", err=True)
    query = clean(query)
    try:
        if url:
            from .remote import search_remote

            answer = search_remote(url, query, top_k)
        else:
            answer = _kb(data_dir).search(query, top_k=top_k, door="cli").as_dict()
    except KbError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(answer, ensure_ascii=False, indent=2))
    else:
        render.answer(answer, full=full)


@cli.command()
@click.argument("article_id")
@data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the article as JSON.")
def show(article_id, data_dir, as_json):
    """Print one article by id (as listed by `kb search`)."""
    try:
        article = _kb(data_dir).get_article(article_id)
    except KbError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(article, ensure_ascii=False, indent=2))
    else:
        click.echo(render.title(article["title"]) + f"  [{article['article_id']}]")
        click.echo(article["body"])


@cli.command()
@data_dir_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="TCP port (0: any free port).")
@click.option("--workers", default=None, type=click.IntRange(1, 64),
              help="Search processes (env KB_SEARCH_PROCESSES). Default: one per core, at most 4; each holds "
                   "its own copy of the index and model (~0.7 GB) and runs one search at a time.")
def serve(data_dir, host, port, workers):
    """Run the HTTP API (and the web page) over the index.

    \b
    POST /v1/search  {"query": "...", "top_k": 5}
    GET  /v1/articles/{id}   GET /healthz   docs at /docs
    Writes (POST/DELETE /v1/articles) need KB_ADMIN_TOKEN to be set.

    Searches are CPU-bound, so they run in worker processes, one per core by
    default (at most 4), fed from one queue: the first free worker takes the next
    search, however the clients connect. Every worker follows the same index, so
    a write is seen by the next search in each.
    """
    import uvicorn

    from api.main import create_app
    from api.settings import ApiSettings
    from kb.service import KnowledgeBase

    settings = ApiSettings.from_env(data_dir=data_dir, search_processes=workers)
    embedded_qdrant = settings.qdrant_path is not None and not settings.qdrant_url
    if embedded_qdrant and settings.search_processes > 1:
        raise click.ClickException(
            "the embedded Qdrant store (KB_QDRANT_PATH) can be open in one process only: use --workers 1, "
            "or run a Qdrant server and set KB_QDRANT_URL")
    if "search_processes" not in settings.model_fields_set:  # neither --workers nor KB_SEARCH_PROCESSES
        settings = settings.model_copy(update={"search_processes": 1 if embedded_qdrant else default_workers()})
    try:
        KnowledgeBase(settings).data.current()
    except KbError as exc:
        raise click.ClickException(str(exc)) from None
    port_is_free(host, port)
    limit_malloc_arenas()
    click.echo(f"kb: serving {settings.data_dir}{_shared_parts(settings)} on http://{host}:{port} with "
               f"{settings.search_processes} worker(s) (docs at /docs)", err=True)
    # One HTTP process: the searches are spread over the workers by the app itself (kb.pool).
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info", timeout_keep_alive=5)


def _shared_parts(settings) -> str:
    """Where the index's shared parts live, for the start-up line (never a password)."""
    from urllib.parse import urlsplit

    parts = []
    if settings.qdrant_url:
        parts.append(f"Qdrant {urlsplit(settings.qdrant_url).hostname}")
    elif settings.qdrant_path:
        parts.append(f"Qdrant store {settings.qdrant_path}")
    if settings.metadata_url:
        url = urlsplit(settings.metadata_url)
        parts.append(f"PostgreSQL {url.hostname}{url.path}")
    return f" (shared: {', '.join(parts)})" if parts else ""


def port_is_free(host: str, port: int) -> None:
    """Say what to do about a busy port before loading anything (uvicorn would end in `Errno 98`)."""
    import socket

    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise click.ClickException(
                f"{host}:{port} is already in use ({exc.strerror}): another `kb serve` (a second `make run`?) or another "
                f"server holds it. Stop it, or pick another port: `kb serve --port {port + 1}` "
                f"(with make: `make run PORT={port + 1}`).") from None


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Keep a long-running server's memory flat: glibc gives every new thread its own malloc
    arena, and the server's thread pools keep making threads (soak: the HTTP process drifted
    681 -> 733 MB in 4 minutes without a limit, flat at 685 with it). Set for this process
    (mallopt) and the search processes it starts (they read MALLOC_ARENA_MAX at start); an
    explicit MALLOC_ARENA_MAX wins."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return
    os.environ["MALLOC_ARENA_MAX"] = str(arenas)
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass  # not glibc: nothing to limit


def default_workers() -> int:
    """One search process per core this process may use, at most 4 (each loads the model)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


@cli.command("eval")
@click.argument("queries", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@data_dir_option
@click.option("-k", "top_k", default=5, show_default=True, type=click.IntRange(1, 50))
@click.option("--json", "as_json", is_flag=True, help="Print figures (and per-query misses) as JSON.")
@click.option("--misses", is_flag=True, help="List the queries whose relevant article was not ranked first.")
def eval_cmd(queries, data_dir, top_k, as_json, misses):
    """Measure retrieval on a JSON-lines query set.

    Each line: {"qid", "query", "relevant": [article ids], "kind"}; `relevant: []`
    means the corpus does not cover it and `confident` must be false. Prints
    recall@1, recall@5, MRR and latency per query kind, and confidence figures
    out of fold: every covered query is searched again with its article left
    out, and each verdict comes from a model fitted without that article
    (cross-validation grouped by article).
    """
    from kb import evaluate

    kb = _kb(data_dir)
    try:
        qs = evaluate.load_queries(queries)
        kb.warm()
        report = evaluate.run(qs, lambda q, k, exclude=frozenset(): kb.search(q, top_k=k, exclude=exclude), k=top_k)
    except KbError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        out = report.as_dict()
        out["misses"] = [
            {"qid": o.query.qid, "kind": o.query.kind, "relevant": list(o.query.relevant), "got": o.ranked[:3], "confident": o.confident}
            for o in report.outcomes if not o.confident_right or (o.query.relevant and o.rank != 1)
        ]
        click.echo(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        render.eval_table(report)
        if misses:
            render.eval_misses(report)


for command in (run, watch, mcp_command, gaps, link, draft):
    cli.add_command(command)


def main() -> None:  # pragma: no cover
    cli()
