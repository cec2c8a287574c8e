"""Shared fixtures: real Chroma on temp dirs, the real ONNX embedder, respx mocks of the OpenAI wire."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import httpx
import pytest

os.environ["ORT_DISABLE_TELEMETRY"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"

FIXTURES = Path(__file__).parent / "fixtures"
LLM_BASE = "http://llm.test/v1"
FAKE_KEY = "sk-test-SECRET-0123456789abcdef"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """Tests start with no LLM and no assistant settings from the developer's shell."""
    for name in list(os.environ):
        if (name.startswith("ASSISTANT_") and not name.startswith("ASSISTANT_TEST_")) or name in {
                "OPENAI_API_KEY", "OPENAI_BASE_URL"}:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASSISTANT_LLM_MAX_RETRIES", "2")
    # re-ranking is on by default where SmolLM2's weights are installed: the other tests must not depend on
    # that (tests/test_rerank.py tests the default)
    monkeypatch.setenv("ASSISTANT_RERANK", "off")


@pytest.fixture(autouse=True, scope="module")
def models_released_after_each_module():
    """The suite runs in one process: the embedder's sessions and programs opened for a module's own cache folders,
    and a re-ranking model, are dropped when it ends, so memory holds one module's models, not every module's."""
    yield
    import gc
    import sys

    embedder = sys.modules.get("assistant.embed.embedder")
    if embedder is not None:
        embedder.OnnxMiniLM.release()
    rerank = sys.modules.get("assistant.search.rerank")
    if rerank is not None:
        rerank.reranker.cache_clear()
    gc.collect()
    from assistant.store.memory import release_memory

    release_memory()


@pytest.fixture
def no_shipped_vectors(monkeypatch, tmp_path):
    """No table of shipped vectors (assistant/embed/shipped.py): every text goes through the model, as a corpus
    other than the bundled one does (the test fixtures' abstracts are bundled ones)."""
    from assistant.embed import shipped

    monkeypatch.setattr(shipped, "table_path", lambda: tmp_path / "no-table.npz")
    shipped.forget_table()
    yield
    monkeypatch.undo()
    shipped.forget_table()


@pytest.fixture(scope="session")
def bundled_index_dir(tmp_path_factory) -> Path:
    """The bundled ICLR 2026 corpus, built once per test session (read-only for tests) as on a fresh clone: the
    first read of a directory holding what the repository's index_store/ ships (its placeholder) builds it."""
    from assistant.config import Settings
    from assistant.store.opening import open_index

    path = tmp_path_factory.mktemp("bundled") / "index"
    path.mkdir()
    shutil.copy(Path(__file__).parent.parent / "index_store" / ".gitkeep", path)
    before = os.environ.get("ASSISTANT_INDEX_DIR")
    os.environ["ASSISTANT_INDEX_DIR"] = str(path)  # the default index directory: built on first use
    try:
        open_index(Settings.from_env())
    finally:
        if before is None:
            os.environ.pop("ASSISTANT_INDEX_DIR", None)
        else:
            os.environ["ASSISTANT_INDEX_DIR"] = before
    return path


@pytest.fixture
def bundled_settings(bundled_index_dir):
    from assistant.config import Settings

    return Settings.from_env(index_dir=bundled_index_dir)


@pytest.fixture(scope="session")
def mini_index_template(tmp_path_factory) -> Path:
    from assistant.config import Settings
    from assistant.text.corpus import load_papers
    from assistant.store.ingest import ingest

    path = tmp_path_factory.mktemp("mini") / "index"
    papers, _ = load_papers([FIXTURES / "mini.txt"])
    ingest(papers, Settings(index_dir=path))
    return path


@pytest.fixture
def mini_index(tmp_path, mini_index_template) -> Path:
    """A writable copy of a 6-paper index, for tests that change it."""
    dest = tmp_path / "index"
    shutil.copytree(mini_index_template, dest)
    return dest


@pytest.fixture
def llm_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", LLM_BASE)
    monkeypatch.setenv("ASSISTANT_MODEL", "test-model")


def sse(*pieces: str, done: bool = True, finish: bool | str = True, usage: bool = True) -> bytes:
    """A streamed chat completion as server-sent events (``finish``: True for "stop", or the reason)."""
    events = []
    for i, piece in enumerate(pieces):
        events.append({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "test-model",
                       "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece} if i == 0
                                    else {"content": piece}, "finish_reason": None}]})
    if finish:
        events.append({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "test-model",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop" if finish is True else finish}]})
    if usage:
        events.append({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "test-model",
                       "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    if done:
        body += "data: [DONE]\n\n"
    return body.encode()


def sse_response(*pieces: str, **kw) -> httpx.Response:
    return httpx.Response(200, content=sse(*pieces, **kw), headers={"content-type": "text/event-stream"})


def completion_json(text: str) -> dict:
    return {"id": "c2", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}


@pytest.fixture
def mocked_openai_chat(llm_env):
    """A respx route for POST /chat/completions; set ``.side_effect`` or ``.return_value`` per test."""
    import respx

    with respx.mock(assert_all_called=False) as router:
        route = router.post(f"{LLM_BASE}/chat/completions")
        yield route


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(cmd: list[str], health_url: str, log_path: Path, what: str, timeout: float = 60.0):
    """Start a real server process on loopback, wait until ``health_url`` answers 200, stop it by PID."""
    import signal
    import subprocess
    import time

    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{what} exited with {proc.returncode}; see {log_path}")
            try:
                if httpx.get(health_url, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                pytest.fail(f"{what} did not start within {timeout:.0f} s; see {log_path}")
            time.sleep(0.2)
        yield
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def heavy_modules_after(code: str, modules=("chromadb", "onnxruntime", "openai", "llama_index.core")) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after running ``code``."""
    import subprocess
    import sys

    probe = f"{code}\nimport sys; print(','.join(m for m in {tuple(modules)!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


@contextlib.contextmanager
def loopback_llm(behave):
    """A real HTTP server on a loopback port, in a thread, for what respx cannot fake: bytes on the wire at the pace
    a misbehaving server sends them. ``behave(handler)`` writes the whole raw response to ``handler.wfile``;
    yields (the base URL, a dict the behaviour may fill: ``hung_up`` is set when the client closed first)."""
    import http.server
    import threading

    seen: dict = {"hung_up": False, "requests": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            seen["requests"] += 1
            self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                behave(self, seen)
            except (BrokenPipeError, ConnectionResetError):
                seen["hung_up"] = True

        do_GET = do_POST  # noqa: N815

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


# --- the fast tier's stand-in embedder -------------------------------------------------------------------------------


class EmbedDemo:
    """A stand-in for the model, in the spirit of simonw/llm's EmbedDemo: each word of a text counted in one of 384
    dimensions picked by its hash, the counts scaled to unit length. Texts that share words are near, none loads a
    model, and the same text always gives the same vector. Registered as ``ASSISTANT_EMBEDDER=demo``."""

    model_name = "demo"
    dim = 384

    def embed_array(self, texts):
        import hashlib
        import re

        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % self.dim] += 1
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-12)
            if not out[row].any():
                out[row, 0] = 1.0
        return out


def _register_the_stand_in():
    from assistant.embed.embedders import register

    register("demo", lambda settings: EmbedDemo())


_register_the_stand_in()


@pytest.fixture
def demo_index(tmp_path, monkeypatch) -> Path:
    """The six abstracts of tests/fixtures/mini.txt (copied to ``tmp_path / "mini.txt"``) in a real Chroma index
    embedded by :class:`EmbedDemo` (the fast tier: no model loaded); ``ASSISTANT_EMBEDDER=demo`` stays set for the
    test, as a user's setting would."""
    from assistant.config import Settings
    from assistant.store.ingest import ingest
    from assistant.text.corpus import load_papers

    monkeypatch.setenv("ASSISTANT_EMBEDDER", "demo")
    path, mine = tmp_path / "demo-index", tmp_path / "mini.txt"  # the user's file: a test may edit it
    shutil.copy(FIXTURES / "mini.txt", mine)
    papers, _ = load_papers([mine])
    ingest(papers, Settings.from_env(index_dir=path), sources=[str(mine)])
    return path


# --- tiers -------------------------------------------------------------------------------------------------------
#
# Every test is in one or more tiers, by what it needs (plain `pytest` runs them all; CONTRIBUTING.md has the
# times): `fast` (no model, no index, no process: `pytest -m fast`, under a minute), `model` (the real ONNX embedder
# or an index built with it), `subprocess` (real CLI processes, kills, a pseudo-terminal) and `server` (a real Chroma
# or llama.cpp server, a browser).

#: Fixtures that build or open an index with the real embedder.
INDEX_FIXTURES = {"bundled_index_dir", "bundled_settings", "mini_index", "mini_index_template", "hostile_index",
                  "conversation", "fl_map", "big_index"}
#: Modules whose tests start real processes; those that need a real server; those that load the model without
#: an index fixture (they ingest files themselves or read the embedder).
SUBPROCESS_MODULES = {"test_crash", "test_terminal", "test_mcp", "test_packaging", "test_integrity", "test_repair",
                      "test_ingest"}
SERVER_MODULES = {"test_server", "test_llamacpp"}
MODEL_MODULES = {"test_embedder", "test_npgraph", "test_rerank", "test_smollm", "test_chunking", "test_index",
                 "test_hostile_text", "test_bad_input", "test_export", "test_security", "test_chat", "test_cli",
                 "test_synthesis", "test_answer", "test_retrieve", "test_evaluate", "test_dense", "test_llama_index",
                 "test_landscape", "test_integrity", "test_ingest", "test_repair", "test_crash", "test_mcp",
                 "test_terminal", "test_server", "test_llamacpp"}


def pytest_configure(config):
    for tier, what in (("fast", "no model, index, process or server"), ("model", "the real embedder or an index"),
                       ("subprocess", "real CLI processes"), ("server", "a real Chroma/llama.cpp server or browser")):
        config.addinivalue_line("markers", f"{tier}: {what}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        fixtures = set(getattr(item, "fixturenames", ()))
        tiers = {m.name for m in item.iter_markers() if m.name in ("model", "subprocess", "server")}  # said by the test
        if module in SERVER_MODULES or "browser" in fixtures or "chroma_url" in fixtures:
            tiers.add("server")
        if module in SUBPROCESS_MODULES:
            tiers.add("subprocess")
        if module in MODEL_MODULES or fixtures & INDEX_FIXTURES:
            tiers.add("model")
        for tier in tiers or {"fast"}:
            item.add_marker(getattr(pytest.mark, tier))
