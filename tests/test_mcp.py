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
        assert absent.structured_content["parts"] == []
        apart = await client.call_tool("ask", {"question": "federated LoRA fine-tuning?"})
        held = apart.structured_content
        assert held["answerable"] is False and held["citations"] == [] and len(held["parts"]) == 2
        assert all(part["papers"] and part["papers"][0]["uri"].startswith("paper://") for part in held["parts"])
        assert "none on both" in apart.content[0].text and "On “federated”:" in apart.content[0].text
        apart_which = await client.call_tool("which", {"criterion": "federated LoRA fine-tuning"})
        assert apart_which.structured_content["count"] == 0 and len(apart_which.structured_content["parts"]) == 2

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
        named = await client.call_tool("which", {"criterion": "evaluated on Kinetics-700"})
        assert named.structured_content["name"] == "Kinetics-700" and named.structured_content["count"] == 0
        assert named.content[0].text == "No paper of the corpus writes Kinetics-700 (evaluated on Kinetics-700)"
        summary = await client.call_tool("summarize", {"area": "federated learning"})
        assert summary.structured_content["themes"] and summary.structured_content["citations"]

        bad = await client.call_tool("search", {"query": "x", "k": 0})
        assert bad.is_error and bad.content[0].text.startswith("bad arguments to search: k:")
        for loose in (True, "5", 2.0):  # the schema says integer: not coerced to one
            bad = await client.call_tool("search", {"query": "x", "k": loose})
            assert bad.is_error and bad.content[0].text.startswith("bad arguments to search: k:"), loose
        assert "\n" not in bad.content[0].text
        empty = await client.call_tool("ask", {"question": ""})
        assert empty.is_error and "question" in empty.content[0].text
        for tool, arg in (("ask", "question"), ("which", "criterion"), ("summarize", "area")):
            wordless = await client.call_tool(tool, {arg: "???"})  # the CLI's line, not an answer
            assert wordless.is_error and wordless.content[0].text.startswith(f"the {arg} has no words to look for")
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
    assert sorted(m["id"] for m in out if "id" in m) == [1, 2, 3]  # each answered once, initialize included
    assert answers[1]["result"]["serverInfo"]["name"] == "assistant" and "otherwise" not in err
    assert answers[2]["result"]["structuredContent"]["answerable"] is True
    assert "building the index" in err  # the progress went where it belongs
    shutil.rmtree(default, ignore_errors=True)


def _initialize(request_id, version):
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}


def _sdk_replies(early, then=None):
    """What the SDK itself writes when served ``early.line`` as the first message of a connection (through
    :func:`spliced`), then the request ``then`` if given; the client leaves once answered."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    from assistant.cli.mcp_handshake import spliced
    from assistant.cli.mcp_server import build

    server = build(lambda: None, early)._lowlevel_server
    replies = []

    async def client(read_in, written):
        async with read_in:
            if then is not None:
                await read_in.send(SessionMessage(jsonrpc_message_adapter.validate_python(then)))
                async for m in written:
                    replies.append(json.loads(m.message.model_dump_json(by_alias=True, exclude_unset=True)))
                    if replies[-1].get("id") == then["id"]:
                        return

    async def main():
        read_in, read = anyio.create_memory_object_stream(1)
        write, written = anyio.create_memory_object_stream(10)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(client, read_in, written)
            await spliced(server, read, write, early)
        replies.extend([json.loads(m.message.model_dump_json(by_alias=True, exclude_unset=True))
                        async for m in written])

    anyio.run(main)
    return replies


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "1999-01-01"])
def test_initialize_is_answered_before_the_sdk_loads_with_the_sdk_s_own_answer(version, capfd):
    """The server answers `initialize` from a byte-exact read of the first line (the next line stays unread, for the
    SDK), and its answer is the one the SDK gives for every protocol version, a version it does not know included;
    the SDK, handed the same line, serves the connection and its duplicate answer is dropped."""
    from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from assistant.cli.mcp_handshake import PROTOCOL_VERSIONS, Early, answer_early

    assert PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    first = json.dumps(_initialize(7, version)) + "\n"
    then = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
    client_r, client_w = os.pipe()
    server_r, server_w = os.pipe()
    os.write(client_w, (first + then).encode())
    early = answer_early(client_r, server_w)
    assert early.line == first.encode() and early.request_id == 7
    assert os.read(client_r, 1 << 16) == then.encode()  # the rest of the input is the SDK's to read
    sent = json.loads(os.read(server_r, 1 << 16))

    sdk = _sdk_replies(Early(line=early.line))  # the SDK answering the same line itself
    assert [m["id"] for m in sdk] == [7] and sent == sdk[0]
    assert sent["result"]["protocolVersion"] == (version if version in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1])
    assert _sdk_replies(early) == []  # served after the early answer: the SDK's own is not sent again
    assert "otherwise" not in capfd.readouterr().err


def test_a_first_line_that_is_not_a_well_formed_initialize_is_left_to_the_sdk():
    """Read, not answered, and handed to the SDK as its first message: it answers it as it would have."""
    from assistant.cli.mcp_handshake import answer_early

    hello = _initialize(2, "2025-06-18")
    for line, ids in (('{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n', [1, 2]), ("not json\n", [2]),
                      (json.dumps({**_initialize(1, "2025-06-18"), "params": {}}) + "\n", [1, 2])):
        r, w = os.pipe()
        out_r, out_w = os.pipe()
        os.write(w, line.encode())
        os.close(w)
        early = answer_early(r, out_w)
        os.close(out_w)
        assert early.line == line.encode() and early.request_id is None and os.read(out_r, 100) == b""
        replies = _sdk_replies(early, then=hello)
        assert [m["id"] for m in replies] == ids, replies
        assert ("error" in replies[0]) == line.startswith('{"jsonrpc": "2.0", "id": 1, "method": "initialize"')


def test_an_llm_answer_citing_nothing_or_no_source_says_so_to_the_agent(bundled_index_dir, mocked_openai_chat):
    """What the terminal warns of reaches an agent too: an LLM answer citing none of its sources came back as a bare
    answer ("checked against the abstracts", says the tool), and a citation to no source only as "[99?]"."""
    from assistant.cli.mcp_server import ask_record, render_answer
    from assistant.config import Settings
    from assistant.service.api import ask

    from .conftest import sse_response

    settings = Settings.from_env().replace(index={"dir": bundled_index_dir})
    mocked_openai_chat.return_value = sse_response("Federated learning is a popular topic.")
    record = ask_record(ask("Which papers study federated learning?", settings))
    assert record.uncited and record.citations == [] and record.quoted and "[1]" in record.quoted
    text = render_answer(record)
    assert "nothing above is checked against an abstract" in text and record.quoted in text
    mocked_openai_chat.return_value = sse_response("FL keeps data local [1]. Magic [99].")
    record = ask_record(ask("Which papers study federated learning?", settings))
    assert not record.uncited and record.invalid_citations == [99] and "[99?]" in record.answer
    assert "Note: [99] in the answer name no source it was given" in render_answer(record)
