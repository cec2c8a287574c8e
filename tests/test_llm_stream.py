"""A streamed answer's bounds (llm._consume): a server that drips, one that ignores max_tokens, and one that
answers a stream request with a plain JSON body."""

import json
import time

import httpx
import pytest

from assistant.config import Settings
from assistant.errors import LLMError
from assistant.qa.llm import CHARS_PER_TOKEN, chat

from .conftest import completion_json


def _event(piece: str) -> bytes:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
    return f"data: {json.dumps(body)}\n\n".encode()


def _streaming(chunks, delay: float = 0.0) -> httpx.Response:
    def body():
        for piece in chunks:
            if delay:
                time.sleep(delay)
            yield _event(piece)
        yield b"data: [DONE]\n\n"

    return httpx.Response(200, content=body(), headers={"content-type": "text/event-stream"})


def test_a_json_body_to_a_stream_request_is_malformed_not_a_stream_that_stopped(mocked_openai_chat):
    mocked_openai_chat.return_value = httpx.Response(200, json=completion_json("Hello [1]."))
    with pytest.raises(LLMError, match="malformed"):
        chat(Settings.from_env(), [{"role": "user", "content": "hi"}])


def test_a_server_ignoring_max_tokens_is_not_read_past_the_cap(mocked_openai_chat, monkeypatch):
    monkeypatch.setenv("ASSISTANT_MAX_TOKENS", "16")
    sent = []

    def endless():
        for _ in range(200_000):  # megabytes, if all read
            sent.append(1)
            yield "word " * 20

    mocked_openai_chat.return_value = _streaming(endless())
    got = chat(Settings.from_env(), [{"role": "user", "content": "hi"}])
    assert len(got.text) == 16 * CHARS_PER_TOKEN and not got.complete and got.finish_reason == "length"
    assert len(sent) < 1000  # it stopped reading


def test_a_dripping_stream_is_cut_at_its_total_bound(mocked_openai_chat, monkeypatch):
    # bound: the timeout (1 s) + 4 tokens at 4 tokens a second = 2 s; the server would take 40 x 0.25 = 10 s
    monkeypatch.setenv("ASSISTANT_LLM_TIMEOUT", "1")
    monkeypatch.setenv("ASSISTANT_MAX_TOKENS", "4")
    mocked_openai_chat.return_value = _streaming(["a"] * 40, delay=0.25)
    got = chat(Settings.from_env(), [{"role": "user", "content": "hi"}])
    assert not got.complete and 0 < len(got.text) < 40  # the client stopped reading before the server was done


# --- bounds on the wire (issue 47 rows 19-21): a real server on a loopback port, misbehaving at its own pace ----
#
# Each server would go on for two minutes; the client must hang up long before (the server sees the connection
# closed). Nothing here measures the client's speed: the check is who stopped first.

from .conftest import loopback_llm  # noqa: E402

SERVER_GIVES_UP = 120.0  # seconds a misbehaving server goes on for, if nobody hangs up


def _drip(handler, data: bytes, every: float, seen: dict, until: float = SERVER_GIVES_UP) -> None:
    """Write ``data`` again and again, one piece per ``every`` seconds, for ``until`` seconds."""
    end = time.monotonic() + until
    while time.monotonic() < end:
        handler.wfile.write(data)
        handler.wfile.flush()
        time.sleep(every)
    seen["finished"] = True


def _llm_env(monkeypatch, url: str, timeout: str = "1") -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-0123456789")
    monkeypatch.setenv("ASSISTANT_LLM_TIMEOUT", timeout)
    monkeypatch.setenv("ASSISTANT_LLM_MAX_RETRIES", "0")


def test_a_stream_of_comment_lines_only_is_cut_at_its_gap_bound(monkeypatch):
    """Row 19: an LLM stream that sends only SSE comment lines (`: ping`) ran 128 s where the bound is 15 s."""
    def pings(handler, seen):
        handler.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
        handler.wfile.write(_event("Hello"))
        _drip(handler, b": ping\n\n", 0.05, seen)

    with loopback_llm(pings) as (url, seen):
        _llm_env(monkeypatch, url)
        got = chat(Settings.from_env(), [{"role": "user", "content": "hi"}])
        assert got.text == "Hello" and not got.complete  # what arrived is kept, marked incomplete
        assert not seen.get("finished")  # the client hung up; the server did not run out of pings


def test_headers_sent_a_byte_at_a_time_are_cut_at_the_timeout(monkeypatch):
    """Row 20: response headers sent one byte a second took 123-126 s where ASSISTANT_LLM_TIMEOUT is 5."""
    def slow_headers(handler, seen):
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + b"x-pad: " + b"a" * 100_000
        end = time.monotonic() + SERVER_GIVES_UP
        for byte in head:
            if time.monotonic() > end:
                break
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.02)
        seen["finished"] = True

    with loopback_llm(slow_headers) as (url, seen):
        _llm_env(monkeypatch, url)
        with pytest.raises(LLMError, match="timed out after 1s"):
            chat(Settings.from_env(), [{"role": "user", "content": "hi"}], stream=False)
        assert not seen.get("finished")


def test_a_huge_reply_is_capped_as_a_stream_is(monkeypatch):
    """Row 21: a 30 MB non-streamed reply to summarize took 550 MB and minutes in line wrapping."""
    body = json.dumps(completion_json("word " * 6_000_000)).encode()  # 30 MB

    def huge(handler, seen):
        handler.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                            + f"content-length: {len(body)}\r\n\r\n".encode())
        for start in range(0, len(body), 65536):
            handler.wfile.write(body[start:start + 65536])
            seen["sent"] = start + 65536
        seen["finished"] = True

    with loopback_llm(huge) as (url, seen):
        _llm_env(monkeypatch, url, timeout="30")
        with pytest.raises(LLMError, match="reply over .* MB long, more than ASSISTANT_MAX_TOKENS"):
            chat(Settings.from_env(), [{"role": "user", "content": "hi"}], stream=False)
        assert seen["requests"] == 1  # not asked again for the same thing
    # a reply within the byte cap but longer than max_tokens allows is kept as long as allowed, marked cut
    body = json.dumps(completion_json("word " * 200_000)).encode()  # 1 MB
    with loopback_llm(lambda h, s: h.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                                 + f"content-length: {len(body)}\r\n\r\n".encode() + body)) as (url, _):
        _llm_env(monkeypatch, url, timeout="30")
        got = chat(Settings.from_env(), [{"role": "user", "content": "hi"}], stream=False)
        assert len(got.text) == 1024 * CHARS_PER_TOKEN and not got.complete


def test_a_reader_that_leaves_a_streamed_answer_loses_neither_the_answer_nor_its_save(mini_index, tmp_path):
    """`ask --save b.md | head -1`: the streamed write hit the closed pipe, "Error: Broken pipe" (exit 1), and the
    answer (paid for) was not saved. Now it completes, is saved, and the command ends quietly, as click ends one
    whose output pipe closed (exit 1)."""
    import os
    import subprocess
    import sys

    from .conftest import loopback_llm, sse

    def answers(handler, seen):
        handler.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
        handler.wfile.write(sse("Mixture-of-Thought reasons in three modalities [1].\n", "It trains them jointly [1]."))

    saved = tmp_path / "b.md"
    with loopback_llm(answers) as (url, _):
        env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test-pipe", "ASSISTANT_MODEL": "m",
               "ORT_DISABLE_TELEMETRY": "1"}
        proc = subprocess.Popen([sys.executable, "-m", "assistant", "ask", "What is Mixture-of-Thought?", "--save",
                                 str(saved), "--index-dir", str(mini_index)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        proc.stdout.close()  # the reader is gone before the first line
        _, said = proc.communicate(timeout=120)
    assert proc.returncode == 1 and b"Error" not in said and b"Traceback" not in said  # click's exit on EPIPE
    assert "It trains them jointly [1]." in saved.read_text(encoding="utf-8")
