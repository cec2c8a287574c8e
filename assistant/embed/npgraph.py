"""The rewritten MiniLM graph (:mod:`assistant.embed.onnxgraph`) run in numpy, for a query or two.

A one-shot ``ask`` embeds one short question. Creating an onnxruntime session for it costs ~0.3-0.4 s CPU
(importing onnxruntime, folding the int8 weights back to float and pre-packing them) where the question
itself takes ~5 ms. This module runs the same graph in numpy: the weights are folded once, stored in one
file beside the cached graph and mapped into memory, so a process reads only the pages it touches (the
rows of the 30,522-word embedding table its question uses).

It knows the eleven operators the rewritten graph uses and refuses anything else (:class:`GraphError`);
:func:`assistant.embed.embedder.OnnxMiniLM` checks its output against onnxruntime's on probe texts before
the file is kept, and uses onnxruntime whenever the file is missing, refused or unreadable.
"""

from __future__ import annotations

import json
import math
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: Bump when what :func:`compile_graph` writes, or how :meth:`Program.run` reads it, changes.
VERSION = 1
_MAGIC = b"ASSTNPG1"
_ALIGN = 64
_OPS = {"Cast", "Mul", "Add", "MatMul", "Concat", "Gather", "Shape", "Slice", "LayerNormalization", "Gelu",
        "Attention"}
_DTYPES = {1: "float32", 6: "int32", 7: "int64"}  # ONNX TensorProto codes the graph casts to


class GraphError(ValueError):
    """The graph uses something this runner does not implement."""


@dataclass
class Program:
    """The graph's non-constant nodes in order, and every constant they read (weights folded to float)."""

    nodes: list[tuple[str, list[str], list[str], dict[str, Any]]]
    arrays: dict[str, np.ndarray]
    output: str
    #: keeps the file's memory map open while the arrays view it
    _keep: Any = field(default=None, repr=False)

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        env = dict(self.arrays)
        env.update(feeds)
        for node in self.nodes:
            env[node[2][0]] = _run_node(node, env)
        return env[self.output]


def compile_graph(data: bytes) -> Program:
    """Parse a serialized graph and fold every node whose inputs are all constants (the int8 weights'
    Cast and Mul by their scales, the QKV Concats) into float arrays."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load_from_string(data)
    values: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    nodes = []
    for n in model.graph.node:
        if n.op_type not in _OPS or n.domain not in ("", "com.microsoft") or len(n.output) != 1:
            raise GraphError(f"operator {n.domain or 'ai.onnx'}.{n.op_type} is not implemented")
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        if any(not isinstance(v, (int, float)) for v in attrs.values()):
            raise GraphError(f"{n.op_type} has an attribute that is not a number")
        node = (n.op_type, list(n.input), list(n.output), attrs)
        if all(name in values for name in n.input if name):
            values[n.output[0]] = np.ascontiguousarray(_run_node(node, values))
        else:
            nodes.append(node)
    used = {name for _, inputs, _, _ in nodes for name in inputs}
    return Program(nodes, {k: v for k, v in values.items() if k in used}, model.graph.output[0].name)


def save(program: Program, path: Path) -> None:
    """Write the program to ``path`` (write-then-rename: a reader never sees half a file)."""
    table, offset = {}, 0
    for name, a in program.arrays.items():
        table[name] = [a.dtype.str, list(a.shape), offset]
        offset += -(-a.nbytes // _ALIGN) * _ALIGN
    header = json.dumps({"version": VERSION, "nodes": program.nodes, "arrays": table,
                         "output": program.output}).encode()
    start = -(-(len(_MAGIC) + 8 + len(header)) // _ALIGN) * _ALIGN
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(_MAGIC + len(header).to_bytes(8, "little") + header)
            for name, a in program.arrays.items():
                f.seek(start + table[name][2])
                f.write(a.tobytes())
            f.truncate(start + offset)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def load(path: Path) -> Program:
    """The program in ``path``, its arrays read-only views of the mapped file; GraphError if the file is
    not one this version wrote (or is cut short)."""
    import numpy as np

    with open(path, "rb") as f:
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            raise GraphError(f"{path} is empty") from None
    try:
        if mapped[:len(_MAGIC)] != _MAGIC:
            raise GraphError(f"{path} is not a numpy graph")
        size = int.from_bytes(mapped[len(_MAGIC):len(_MAGIC) + 8], "little")
        meta = json.loads(mapped[len(_MAGIC) + 8:len(_MAGIC) + 8 + size])
        if meta.get("version") != VERSION:
            raise GraphError(f"{path} was written by another version")
        start = -(-(len(_MAGIC) + 8 + size) // _ALIGN) * _ALIGN
        table = [(name, np.dtype(dtype), shape, start + offset) for name, (dtype, shape, offset) in meta["arrays"].items()]
        if any(at + math.prod(shape) * dtype.itemsize > len(mapped) for _, dtype, shape, at in table):
            raise GraphError(f"{path} is cut short")
        nodes = [(op, inputs, outputs, attrs) for op, inputs, outputs, attrs in meta["nodes"]]
        output = meta["output"]
    except GraphError:
        mapped.close()
        raise
    except (ValueError, KeyError, TypeError) as e:
        mapped.close()
        raise GraphError(f"{path} is unreadable: {e}") from None
    arrays = {name: np.frombuffer(mapped, dtype=dtype, count=math.prod(shape), offset=at).reshape(shape)
              for name, dtype, shape, at in table}
    return Program(nodes, arrays, output, _keep=mapped)


def erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1.5e-7 (Abramowitz & Stegun 7.1.26, in float64): numpy has none, and this keeps the vectors
    within ~1e-7 of onnxruntime's."""
    import numpy as np

    a = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return (np.sign(x) * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


def _attention(hidden, weight, bias, mask, heads: int):
    """com.microsoft Attention: packed QKV projection, scaled dot product per head, masked keys at -10000
    (onnxruntime's default mask filter value), heads concatenated."""
    import numpy as np

    batch, seq, _ = hidden.shape
    size = weight.shape[1] // 3 // heads
    qkv = hidden @ weight + bias
    q, k, v = (qkv[..., i * heads * size:(i + 1) * heads * size].reshape(batch, seq, heads, size)
               .transpose(0, 2, 1, 3) for i in range(3))
    scores = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / math.sqrt(size))
    scores += ((1 - mask.astype(np.float32)) * np.float32(-10000.0))[:, None, None, :]
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(batch, seq, heads * size)


def _run_node(node, env: dict):
    import numpy as np

    op, inputs, _, attrs = node
    x = [env[name] if name else None for name in inputs]
    if op == "Cast":
        if attrs["to"] not in _DTYPES:
            raise GraphError(f"Cast to ONNX type {attrs['to']} is not implemented")
        return x[0].astype(_DTYPES[attrs["to"]])
    if op in ("Mul", "Add"):
        return x[0] * x[1] if op == "Mul" else x[0] + x[1]
    if op == "MatMul":
        return x[0] @ x[1]
    if op == "Concat":
        return np.concatenate(x, axis=attrs["axis"])
    if op == "Gather":
        return np.take(x[0], x[1], axis=attrs.get("axis", 0))
    if op == "Shape":
        shape = np.array(x[0].shape, dtype=np.int64)
        return shape[attrs.get("start", 0):attrs.get("end", len(shape))]
    if op == "Slice":
        axes = x[3] if len(x) > 3 and x[3] is not None else range(len(x[1]))
        steps = x[4] if len(x) > 4 and x[4] is not None else [1] * len(x[1])
        cut = [slice(None)] * x[0].ndim
        for s, e, axis, step in zip(x[1], x[2], axes, steps):
            cut[int(axis)] = slice(int(s), int(e), int(step))
        return x[0][tuple(cut)]
    if op == "LayerNormalization":
        if attrs.get("axis", -1) != -1:
            raise GraphError("LayerNormalization over another axis than the last is not implemented")
        centred = x[0] - x[0].mean(axis=-1, keepdims=True)
        var = (centred * centred).mean(axis=-1, keepdims=True)
        return centred / np.sqrt(var + np.float32(attrs["epsilon"])) * x[1] + x[2]
    if op == "Gelu":
        return np.float32(0.5) * x[0] * (np.float32(1.0) + erf(x[0] * np.float32(1 / math.sqrt(2))))
    if op == "Attention":
        if len(x) != 4 or x[3] is None or x[3].ndim != 2 or set(attrs) - {"num_heads"}:
            raise GraphError("only Attention with a 2-D padding mask and num_heads is implemented")
        return _attention(x[0], x[1], x[2], x[3], attrs["num_heads"])
    raise GraphError(f"operator {op} is not implemented")
