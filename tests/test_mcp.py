"""`assistant mcp`, driven as an agent tool drives it: the MCP SDK's own client over stdio, against a real server
subprocess on the bundled corpus (issue 51)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import anyio
import pytest

pytest.importorskip("mcp")


def _params(index_dir, **env):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "assistant", "mcp", "--index-dir", str(index_dir)],
                                 env={**os.environ, "ORT_DISABLE_TELEMETRY": "1", "ASSISTANT_RERANK": "off", **env})


def _session(index_dir, body, **env):
    """Run ``body(client)`` against a server subprocess over stdio."""
    from mcp import Client

    async def main():
        async with Client(_params(index_dir, **env)) as client:
            return await body(client)

    return anyio.run(main)


def test_tools_answers_refusals_names_and_resources(bundled_index_dir):
    async def body(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"ask", "search", "show", "which", "summarize"}
        for tool in tools.values():  # each described, with typed arguments and a schema for its results
            assert tool.description and tool.input_schema["properties"] and tool.output_schema
        assert tools["ask"].input_schema["required"] == ["question"]
        assert tools["search"].input_schema["properties"]["k"]["type"] == "integer"

        answer = await client.call_tool("ask", {"question": "What is Qronos?"})
        data = answer.structured_content
        assert not answer.is_error and data["answerable"] and data["citations"]
        sent = {(s["n"], s["paper_id"]) for s in data["sources"]}
        assert all((c["n"], c["paper_id"]) in sent for c in data["citations"])  # every citation is a source sent
        assert "[1]" in data["answer"] and "Sources" in answer.content[0].text

        absent = await client.call_tool("ask", {"question": "Is there work on speculative decoding?"})
        assert not absent.is_error and absent.structured_content["answerable"] is False
        assert absent.structured_content["citations"] == [] and absent.structured_content["related"]

        shown = await client.call_tool("show", {"paper": "Qronos"})
        assert not shown.is_error and "Qronos" in shown.structured_content["abstract"]
        uri = shown.structured_content["uri"]
        assert uri.startswith("paper://") and "%23" in uri

        read = await client.read_resource(uri)
        paper = json.loads(read.contents[0].text)
        assert paper["paper_id"] == shown.structured_content["paper_id"] and paper["abstract"]
        listed = await client.list_resources()
        assert len(listed.resources) == 95 and uri in {str(r.uri) for r in listed.resources}

        hits = await client.call_tool("search", {"query": "token pruning for vision-language models", "k": 3})
        assert [h["rank"] for h in hits.structured_content["hits"]] == [1, 2, 3]
        which = await client.call_tool("which", {"criterion": "papers on federated learning"})
        assert which.structured_content["count"] >= 3 and all(p["evidence"] for p in which.structured_content["papers"])
        summary = await client.call_tool("summarize", {"area": "federated learning"})
        assert summary.structured_content["themes"] and summary.structured_content["citations"]

        bad = await client.call_tool("search", {"query": "x", "k": 0})
        assert bad.is_error and bad.content[0].text.startswith("bad arguments to search: k:")
        assert "\n" not in bad.content[0].text
        empty = await client.call_tool("ask", {"question": ""})
        assert empty.is_error and "question" in empty.content[0].text
        unknown = await client.call_tool("show", {"paper": "no-such-paper-anywhere"})
        assert unknown.is_error and unknown.content[0].text.startswith("not in the index: 'no-such-paper-anywhere'")

    _session(bundled_index_dir, body)


def test_a_damaged_or_missing_index_is_an_mcp_error_with_the_cli_s_line(mini_index, tmp_path):
    from typer.testing import CliRunner

    from assistant.cli.app import app

    (mini_index / "manifest.json").unlink()
    cli = CliRunner().invoke(app, ["search", "reasoning", "--index-dir", str(mini_index)])
    line = " ".join(cli.stderr.split()).removeprefix("Error: ")

    async def body(client):
        res = await client.call_tool("ask", {"question": "What is Mixture-of-Thought?"})
        assert res.is_error and " ".join(res.content[0].text.split()) == line
        typo = await client.call_tool("search", {"query": "reasoning"})
        assert typo.is_error and "doctor --repair" in typo.content[0].text
        return True

    assert _session(mini_index, body)
    missing = tmp_path / "nowhere"

    async def nothing(client):
        res = await client.call_tool("search", {"query": "reasoning"})
        assert res.is_error and res.content[0].text.startswith(f"no index at {missing}")
        return True

    assert _session(missing, nothing)
    assert not missing.exists()


def test_stdout_carries_protocol_messages_only(mini_index, tmp_path):
    """Raw JSON-RPC over the server's pipes: every line it writes on stdout is a JSON-RPC message, whatever the
    work prints (a first build's progress, a library's warnings: they go to stderr)."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    default = tmp_path / "default"  # the default index directory, built on first use: progress to report
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "ask", "arguments": {"question": "What is Qronos?"}}},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "show", "arguments": {"paper": "Qronos"}}}]
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "ASSISTANT_RERANK": "off", "ASSISTANT_INDEX_DIR": str(default)}
    proc = subprocess.Popen([sys.executable, "-m", "assistant", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    out = []
    try:
        for message in lines:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            while "id" in message and not any(m.get("id") == message["id"] for m in out):
                line = proc.stdout.readline()  # the server answers each request before the next is sent
                assert line, proc.stderr.read()
                out.append(json.loads(line))  # every line a JSON message: nothing else on stdout
    finally:
        proc.stdin.close()  # the client leaves: the server ends
        rest, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=120)
    out += [json.loads(line) for line in rest.splitlines() if line.strip()]
    assert all(m.get("jsonrpc") == "2.0" for m in out)
    answers = {m["id"]: m for m in out if "id" in m}
    assert set(answers) == {1, 2, 3}
    assert answers[2]["result"]["structuredContent"]["answerable"] is True
    assert "building the index" in err  # the progress went where it belongs
    shutil.rmtree(default, ignore_errors=True)
