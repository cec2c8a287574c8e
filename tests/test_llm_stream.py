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
    started = time.monotonic()
    got = chat(Settings.from_env(), [{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 5 and not got.complete and 0 < len(got.text) < 40
