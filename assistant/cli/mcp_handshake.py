"""``assistant mcp``'s handshake, answered before the MCP SDK is imported.

Importing the SDK costs ~0.9 s CPU (its protocol types are pydantic models built at import), and a client waits for
the answer to ``initialize`` before it does anything else. So the server reads the first line of stdin itself, a
byte at a time (nothing after the line is taken from the SDK's reader), and when it is a well-formed ``initialize``
writes the SDK's own answer to it at once: :data:`CAPABILITIES` and :data:`PROTOCOL_VERSIONS` are what the SDK
gives for this server (tests/test_mcp.py compares the two on every run). Then the SDK serves the connection from its
start: :func:`spliced` hands it that same first message, so its state is the one it would have had, and drops its
reply to it, the client having one already. Any other first line goes to the SDK untouched, and it answers.

Nothing heavier than ``json`` is imported here until :func:`spliced`, which runs once the SDK is loaded.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

NAME = "assistant"
INSTRUCTIONS = ("A research corpus of paper abstracts. `ask` answers a question with [n] citations checked against "
                "the abstracts it retrieved, or says the corpus has no paper on it (answerable false, with the "
                "nearest papers as related, never as citations). `search` ranks papers; `which` lists every paper "
                "meeting a criterion with the sentence that shows it; `summarize` groups an area's papers into "
                "themes; `show` reads one paper by id or name. Papers are also resources: paper://<id>.")
# The SDK's answer for this server (MCPServer registers tools, resources and prompts; none changes at run time).
CAPABILITIES = {"prompts": {"listChanged": False}, "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False}}
# mcp.types.version.HANDSHAKE_PROTOCOL_VERSIONS, oldest to newest: a client's version among them is agreed, any
# other gets the newest (the SDK's rule); a client of the handshake-free era sends no `initialize` at all.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


@dataclass(frozen=True)
class Early:
    """What happened before the SDK loaded: the first line read from stdin (b"" at end of input), and, when it was
    an ``initialize`` answered here, its request id and the result sent."""

    line: bytes = b""
    request_id: int | str | None = None
    result: dict | None = None


def server_info() -> dict:
    from assistant import __version__

    return {"name": NAME, "version": __version__}


def initialize_result(message) -> dict | None:
    """The SDK's result for ``message`` when it is a well-formed ``initialize`` request, else None (the SDK then
    answers it, an error included)."""
    if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0" and message.get("method") == "initialize"
            and isinstance(message.get("id"), (int, str)) and not isinstance(message.get("id"), bool)):
        return None
    params = message.get("params")
    client = params.get("clientInfo") if isinstance(params, dict) else None
    if not (isinstance(client, dict) and isinstance(client.get("name"), str) and isinstance(client.get("version"), str)
            and isinstance(params.get("protocolVersion"), str) and isinstance(params.get("capabilities"), dict)):
        return None
    asked = params["protocolVersion"]
    return {"protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
            "capabilities": CAPABILITIES, "serverInfo": server_info(), "instructions": INSTRUCTIONS}


def read_line(fd: int) -> bytes:
    """One line from ``fd``, newline included, read a byte at a time so that nothing after it is consumed (an
    ``initialize`` is a few hundred bytes)."""
    got = bytearray()
    while True:
        byte = os.read(fd, 1)
        if not byte:
            break
        got += byte
        if byte == b"\n":
            break
    return bytes(got)


def answer_early(fd_in: int = 0, fd_out: int = 1) -> Early:
    """Read the client's first line; answer it here when it is an ``initialize`` (see the module's note)."""
    line = read_line(fd_in)
    try:
        message = json.loads(line) if line.endswith(b"\n") else None
    except ValueError:
        message = None
    result = initialize_result(message)
    if result is None:
        return Early(line=line)
    reply = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}, separators=(",", ":")) + "\n"
    data = reply.encode()
    while data:
        data = data[os.write(fd_out, data):]
    return Early(line=line, request_id=message["id"], result=result)


async def spliced(server, read, write, early: Early) -> None:
    """Run the SDK's low-level ``server`` on the stdio streams ``read``/``write`` as if it had read ``early.line``
    itself, without sending its reply to an ``initialize`` answered early (a differing reply is said on stderr)."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCError, JSONRPCResponse, jsonrpc_message_adapter

    options = server.create_initialization_options()
    if not early.line:  # the input had ended: nothing was read that the SDK must see
        await server.run(read, write, options)
        return
    try:
        first = SessionMessage(jsonrpc_message_adapter.validate_json(early.line, by_name=False))
    except Exception as exc:  # the SDK's stdio reader passes an unreadable line on the same way
        first = exc
    to_server, from_client = anyio.create_memory_object_stream(0)
    to_client, from_server = anyio.create_memory_object_stream(0)

    async def feed():
        async with to_server:
            await to_server.send(first)
            async for message in read:
                await to_server.send(message)

    async def drain():
        pending = early.request_id
        async with write, from_server:
            async for out in from_server:
                reply = out.message
                if pending is not None and isinstance(reply, (JSONRPCResponse, JSONRPCError)) \
                        and reply.id == pending:
                    pending = None
                    if not (isinstance(reply, JSONRPCResponse) and reply.result == early.result):
                        print(f"assistant: the SDK answered initialize otherwise than the early reply: "
                              f"{reply.model_dump_json(by_alias=True, exclude_unset=True)[:500]}",
                              file=sys.stderr, flush=True)
                    continue
                await write.send(out)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(feed)
        tasks.start_soon(drain)
        async with to_client:
            await server.run(from_client, to_client, options)
