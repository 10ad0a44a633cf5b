"""`kb mcp` as an assistant uses it: the SDK's own stdio client starts `kb mcp` and calls its tools."""

from __future__ import annotations

import json
import sys

import anyio

from conftest import cli_env

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB during trainer.evaluate()"


async def _session_run(data_dir, work):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "kb_cli", "mcp"], env=cli_env(data_dir))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)


def _structured(result) -> dict:
    if getattr(result, "structured_content", None):
        return result.structured_content
    return json.loads(result.content[0].text)


def test_an_assistant_lists_the_tools_and_gets_an_answer(kb, settings):
    async def work(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        answer = _structured(await session.call_tool("search_errors", {"text": OOM, "top_k": 2}))
        article = _structured(await session.call_tool("get_article", {"article_id": "cuda-oom-eval"}))
        resource = await session.read_resource("kb://articles/cuda-oom-eval")
        return tools, answer, article, resource

    tools, answer, article, resource = anyio.run(_session_run, settings.data_dir, work)
    assert {"search_errors", "get_article"} <= set(tools)
    assert "traceback" in tools["search_errors"].description  # so an assistant knows when to call it
    assert answer["verdict"] in ("answer", "maybe")
    top = answer["articles"][0]
    assert top["article_id"] == "cuda-oom-eval" and "eval_accumulation_steps" in top["fix"]
    assert top["matched_error"] and top["resource"] == "kb://articles/cuda-oom-eval"
    assert article["title"] == "CUDA out of memory only during evaluation" and "path" not in article
    assert "eval_accumulation_steps" in resource.contents[0].text


def test_an_uncovered_error_says_none(kb, settings):
    async def work(session):
        return _structured(await session.call_tool(
            "search_errors", {"text": "npm ERR! code ERESOLVE unable to resolve dependency tree for react@18.2.0"}))

    answer = anyio.run(_session_run, settings.data_dir, work)
    assert answer["verdict"] == "none" and answer["reason"]
