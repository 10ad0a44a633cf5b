"""`kb mcp`: the knowledge base as a Model Context Protocol server (official `mcp` SDK).

An AI coding assistant that sees a traceback calls `search_errors` with it and gets kb's
verdict and the articles' root cause and fix; `get_article` and the `kb://articles/{id}`
resources give the whole article. stdio by default (the client starts `kb mcp`);
`--http` serves streamable HTTP on loopback. Only protocol goes to stdout; logs go to stderr.
"""

from __future__ import annotations

import click

from kb.errors import KbError

from .options import data_dir_option, open_kb

SEARCH_DESCRIPTION = (
    "Look up an error in the team's troubleshooting knowledge base for ML training and serving "
    "(PyTorch, CUDA, NCCL, DeepSpeed, FSDP, transformers, vLLM, …). Call it whenever you see a "
    "traceback, an exception, or an error/log excerpt from training or inference — pass the text "
    "as pasted (a whole traceback or log tail is fine; paths, ranks and numbers are handled). "
    "Returns a verdict ('answer': the top article explains this error; 'maybe': related, check "
    "it; 'none': no article covers it), a one-line reason, and articles with their root cause, "
    "fix and the matched error line. Prefer the fix of an 'answer' over guessing."
)


def build_server(kb):
    """The MCP server over one KnowledgeBase."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(
        name="kb",
        instructions="Troubleshooting knowledge base: call search_errors with any error text or traceback you see.",
    )

    @server.tool(description=SEARCH_DESCRIPTION)
    def search_errors(text: str, top_k: int = 5) -> dict:
        try:
            response = kb.search(text, top_k=max(1, min(int(top_k), 20)), door="mcp")
        except KbError as exc:
            return {"verdict": "none", "reason": str(exc), "articles": []}
        return {
            "verdict": response.verdict,
            "reason": response.reason,
            "articles": [
                {"article_id": r.article_id, "title": r.title, "confidence": round(r.confidence, 3),
                 "root_cause": r.root_cause, "fix": r.fix, "matched_error": r.matched_error,
                 "resource": f"kb://articles/{r.article_id}"}
                for r in response.results
            ],
        }

    @server.tool(description="The whole article (Markdown body, root cause, fix, error lines) for an article_id "
                             "returned by search_errors.")
    def get_article(article_id: str) -> dict:
        article = kb.get_article(article_id)
        article.pop("path", None)  # where the server keeps its files is not the assistant's business
        return article

    @server.resource("kb://articles/{article_id}", name="article", mime_type="text/markdown",
                     description="One knowledge-base article as Markdown.")
    def article_resource(article_id: str) -> str:
        a = kb.get_article(article_id)
        return f"# {a['title']}\n\n{a['body']}"

    return server


@click.command("mcp")
@data_dir_option
@click.option("--http", "http_port", type=click.IntRange(1, 65535), default=None, metavar="PORT",
              help="Serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio.")
def mcp_command(data_dir, http_port):
    """Serve the knowledge base to AI assistants over MCP.

    Tools: search_errors(text, top_k), get_article(article_id); resources:
    kb://articles/{id}. Add it to an MCP client's config, e.g.

    \b
      {"mcpServers": {"kb": {"command": "kb", "args": ["mcp"],
                             "env": {"KB_DATA_DIR": "/path/to/.kb-data"}}}}
    """
    import anyio

    kb = open_kb(data_dir)
    try:
        kb.warm()  # load the index and model before the client's first call
    except KbError as exc:
        click.echo(f"kb mcp: {exc}", err=True)
    server = build_server(kb)
    if http_port:
        click.echo(f"kb mcp: streamable HTTP on http://127.0.0.1:{http_port}/mcp", err=True)
        anyio.run(lambda: server.run_streamable_http_async(host="127.0.0.1", port=http_port))
    else:
        anyio.run(server.run_stdio_async)
