"""How a chat turn is read: a new question, a follow-up on the paper talked about, "tell me more", a choice among
the papers the last answer cited, or chit-chat ("thanks!", the "cool," before a question).

One multinomial logistic regression over the turn's MiniLM vector, its length, whether it asks ("?"), how close it
is to the turn before it (cosine; "what about world models?" after a question on backdoor attacks is far from it,
"what about the runtime?" after one on FlashAttention is not), and which of a learned set of words it has (the
words turns are framed with: "it", "them", "different", "more", ...). Fitted by
``training/fit_turns.py`` on labelled exemplars kept as package data (``assistant/data/turn_exemplars.jsonl``)
and the conversation files, cross-validated leave one file out; stored in ``assistant/data/turns.json``. No
English phrasing rule decides here.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

MODEL_FILE = Path(__file__).resolve().parents[1] / "data" / "turns.json"
LABELS = ("new", "followup", "more", "among", "chat")

#: A word, for the word features (letters only: "it's" gives "it" and "s").
_WORDS = re.compile(r"[a-z]+")
#: A leading piece of a turn: up to 40 characters ending in punctuation ("cool,", "hi :)", "nice name.") and a space.
_PIECE = re.compile(r"^\s*(.{1,40}?[^\w\s'\"]+)\s+(?=\S)")
#: Where a kind the conversation does not allow goes: "more" or a choice with nothing to choose from is a
#: follow-up (before any answer, a new question); a follow-up with nothing to follow, or chit-chat that names a
#: paper, is a new question.
_FALLBACK = {"more": ("followup", "new"), "among": ("followup", "new"), "followup": ("new",), "chat": ("new",)}


@dataclass(frozen=True)
class TurnModel:
    """The fitted model: one weight row and bias per label, standardised features."""

    labels: tuple[str, ...]
    vocab: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # labels x features
    bias: np.ndarray
    context_fill: float  # the cosine to the previous turn read when there is none (the training mean)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        z = ((x - self.mean) / self.scale) @ self.weights.T + self.bias
        z = np.exp(z - z.max())
        return z / z.sum()


@functools.lru_cache(maxsize=1)
def model() -> TurnModel:
    d = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    return TurnModel(labels=tuple(d["labels"]), vocab=tuple(d["vocab"]), mean=np.asarray(d["mean"]),
                     scale=np.asarray(d["scale"]), weights=np.asarray(d["weights"]), bias=np.asarray(d["bias"]),
                     context_fill=float(d["context_fill"]))


def _words(text: str) -> set[str]:
    """The turn's words."""
    return set(_WORDS.findall(text.lower()))


def features(text: str, qvec: np.ndarray, vocab: tuple[str, ...] | list[str], previous: np.ndarray | None = None,
             fill: float = 0.0) -> np.ndarray:
    """What the turn model reads: the embedding, log word count, a question mark, the cosine to the previous turn's
    vector and whether there is one (with none, ``fill``: the cosine then says nothing), and its vocabulary words."""
    words = _WORDS.findall(text.lower())
    have = set(words)
    context = [float(qvec @ previous), 1.0] if previous is not None else [fill, 0.0]
    return np.concatenate([qvec, [math.log1p(len(words)), float("?" in text)], context,
                           [float(w in have) for w in vocab]])


def vocabulary(texts: list[str], min_count: int) -> list[str]:
    """The words in at least ``min_count`` of the texts: the model's word features."""
    seen = Counter(w for t in texts for w in _words(t))
    return sorted(w for w, n in seen.items() if n >= min_count)


def probabilities(text: str, qvec: np.ndarray, previous: np.ndarray | None = None) -> dict[str, float]:
    """How likely the turn is each kind, by the fitted model (``previous``: the vector of the turn before it)."""
    m = model()
    p = m.probabilities(features(text, qvec, m.vocab, previous, m.context_fill))
    return dict(zip(m.labels, (float(x) for x in p)))


def read(text: str, qvec: np.ndarray, possible: frozenset[str] = frozenset(LABELS),
         previous: np.ndarray | None = None) -> str:
    """The most likely kind of turn among those ``possible``; a kind not possible adds its probability to the
    first possible one it falls back to."""
    folded = {label: 0.0 for label in possible}
    for label, prob in probabilities(text, qvec, previous).items():
        target = label if label in possible else next((t for t in _FALLBACK[label] if t in possible), "new")
        folded[target] = folded.get(target, 0.0) + prob
    return max(folded, key=folded.get)


def without_chitchat(text: str, embed: Callable[[str], np.ndarray],
                     keep: Callable[[str], bool] = lambda piece: False, previous: np.ndarray | None = None) -> str:
    """The turn without the pleasantries it opens with: each leading piece up to a comma, full stop or "!" that
    the model reads as chit-chat ("hi :)", "cool,", "haha nice name.") is dropped, unless ``keep`` says it has
    something to search for."""
    rest = text
    while (m := _PIECE.match(rest)) and \
            read(m.group(1), embed(m.group(1)), frozenset(("new", "chat")), previous) == "chat" and \
            not keep(m.group(1)):
        rest = rest[m.end():]
    return rest.strip() or text
