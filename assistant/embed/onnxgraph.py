"""Graph rewrites for the MiniLM ONNX export that onnxruntime does not make on its own.

The PyPI model is a torch export: after every attention softmax it guards against NaN rows
(``Where(IsNaN(p), 0, p)``), and its GELU is five elementwise nodes around ``Erf``. onnxruntime's
optimiser fuses neither, so on 2 cores the guards cost ~7% of inference and the unfused GELU ~5%.
The rewrite removes the guards (a softmax row is NaN only when every key is masked; [CLS] never is)
and replaces each GELU with one ``com.microsoft`` ``Gelu`` (which onnxruntime then fuses with its bias).
Its attention is the export's decomposition of ``scaled_dot_product_attention`` (three projections,
reshapes, the key transposed through shape arithmetic, the scale split over query and key), which
onnxruntime's attention fusion does not recognise either; :func:`fuse_attention` makes each block one
``com.microsoft`` ``Attention`` node (one packed QKV projection, the padding mask applied inside).
Outputs are unchanged up to float rounding; both refuse a graph that does not match.
"""

from __future__ import annotations

import math
from collections import defaultdict

#: Bump when the rewrite changes what it writes (cached graphs carry it in their file name).
VERSION = 2


class RewriteError(ValueError):
    """The graph is not the export this rewrite was written for."""


def _load(data: bytes):
    """The model, its nodes (one list of node objects: ids stay valid while it holds them), and who
    makes, who uses and which initializer each tensor name is."""
    import onnx

    model = onnx.load_from_string(data)
    nodes = list(model.graph.node)
    producer = {out: node for node in nodes for out in node.output}
    consumers: dict[str, list] = defaultdict(list)
    for node in nodes:
        for name in node.input:
            consumers[name].append(node)
    return model, nodes, producer, consumers, {t.name: t for t in model.graph.initializer}


def _array(name: str, initializers: dict, producer: dict):
    """The value of an initializer or Constant node as a numpy array, else None."""
    from onnx import numpy_helper

    if name in initializers:
        return numpy_helper.to_array(initializers[name])
    node = producer.get(name)
    if node is not None and node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
        return numpy_helper.to_array(node.attribute[0].t)
    return None


def rewrite(data: bytes, layers: int = 6) -> bytes:
    """The serialized model with the NaN guards removed and the GELUs and attention blocks fused;
    ``layers`` of each expected."""
    return fuse_attention(_fuse_gelu(data, layers), layers)


def _fuse_gelu(data: bytes, layers: int) -> bytes:
    """The NaN guards removed and each GELU one ``Gelu`` node."""
    import onnx
    from onnx import helper

    model, nodes, producer, consumers, initializers = _load(data)
    graph = model.graph

    def constant(name: str) -> float | None:
        """The scalar value of an initializer or Constant node, else None."""
        arr = _array(name, initializers, producer)
        return float(arr.reshape(-1)[0]) if arr is not None and arr.size == 1 else None

    def only_consumer(name: str, op: str):
        users = consumers.get(name, [])
        if len(users) != 1 or users[0].op_type != op:
            raise RewriteError(f"{name} is not used by exactly one {op}")
        return users[0]

    def other(node, name: str) -> str:
        rest = [i for i in node.input if i != name]
        if len(rest) != 1:
            raise RewriteError(f"{node.op_type} {node.name} has no single other input")
        return rest[0]

    dropped: set[int] = set()
    rename: dict[str, str] = {}
    replace: dict[int, object] = {}  # id of the node a fused node takes the place of -> the fused node
    guards = gelus = 0
    for node in nodes:
        if node.op_type == "Where" and node.input[0] in producer and producer[node.input[0]].op_type == "IsNaN":
            isnan = producer[node.input[0]]
            if isnan.input[0] != node.input[2] or constant(node.input[1]) != 0.0 \
                    or len(consumers[isnan.output[0]]) != 1:
                raise RewriteError("unexpected NaN guard")
            rename[node.output[0]] = node.input[2]
            dropped |= {id(node), id(isnan)}
            guards += 1
        elif node.op_type == "Erf":
            div = producer.get(node.input[0])
            if div is None or div.op_type != "Div" or not math.isclose(constant(div.input[1]) or 0, math.sqrt(2),
                                                                        rel_tol=1e-4):
                raise RewriteError("Erf is not fed by x / sqrt(2)")
            x = div.input[0]
            add = only_consumer(node.output[0], "Add")
            half = only_consumer(add.output[0], "Mul")
            last = only_consumer(half.output[0], "Mul")
            if constant(other(add, node.output[0])) != 1.0 or constant(other(half, add.output[0])) != 0.5 \
                    or other(last, half.output[0]) != x or len(consumers[div.output[0]]) != 1:
                raise RewriteError("Erf is not the middle of x * 0.5 * (1 + erf(x / sqrt(2)))")
            dropped |= {id(div), id(node), id(add), id(half)}
            replace[id(last)] = helper.make_node("Gelu", [x], list(last.output), name=f"gelu_{gelus}",
                                                 domain="com.microsoft")
            gelus += 1
    if guards != layers or gelus != layers:
        raise RewriteError(f"expected {layers} NaN guards and {layers} GELUs, found {guards} and {gelus}")
    if any(out.name in rename for out in graph.output):
        raise RewriteError("a graph output is a NaN guard")

    kept = []
    for node in nodes:
        if id(node) in dropped:
            continue
        node = replace.get(id(node), node)
        for k, name in enumerate(node.input):
            if name in rename:
                node.input[k] = rename[name]
        kept.append(node)
    new_nodes = [onnx.NodeProto.FromString(n.SerializeToString()) for n in kept]
    del graph.node[:]
    graph.node.extend(new_nodes)
    if not any(op.domain == "com.microsoft" for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model.SerializeToString()


def fuse_attention(data: bytes, layers: int = 6, heads: int = 12) -> bytes:
    """Each self-attention block as one ``com.microsoft`` ``Attention`` node (on the graph without NaN guards).

    A block is matched from its ``Softmax``: scores = (q * c) @ (k' * c) + mask, output = softmax @ v,
    then Transpose and Reshape back to (batch, seq, hidden); q, k and v each come from
    ``Add(MatMul(x, W), b)`` through Reshape/Transpose only, on one shared ``x``, and c * c must be
    1 / sqrt(head size), the ``Attention`` op's own scale. The three weights are concatenated by a
    ``Concat`` node (the weights stay int8 in the file; onnxruntime folds them into one packed float
    matrix at load), the biases into one initializer. The additive mask is replaced by the
    ``attention_mask`` input itself (keys with 0 are ignored)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    model, nodes, producer, consumers, initializers = _load(data)
    graph = model.graph
    if "attention_mask" not in {i.name for i in graph.input}:
        raise RewriteError("the graph has no attention_mask input")

    def array(name: str):
        return _array(name, initializers, producer)

    def made_by(name: str, op: str):
        node = producer.get(name)
        if node is None or node.op_type != op:
            raise RewriteError(f"{name} is not made by {op}")
        return node

    def projection(name: str) -> tuple[str, str, object]:
        return _projection(name, producer, array)

    mask = "attention_mask_int32"
    fused: dict[int, list] = {}  # id of the Reshape an Attention replaces -> [Concat, Attention]
    for k, softmax in enumerate(n for n in nodes if n.op_type == "Softmax"):
        add = made_by(softmax.input[0], "Add")
        scores = next((producer[i] for i in add.input if i in producer and producer[i].op_type == "MatMul"), None)
        if scores is None:
            raise RewriteError("softmax input is not scores + mask")
        scaled = [made_by(i, "Mul") for i in scores.input]
        factors = [array(m.input[1]) for m in scaled]
        users = consumers[softmax.output[0]]
        if len(users) != 1 or users[0].op_type != "MatMul" or users[0].input[0] != softmax.output[0]:
            raise RewriteError("softmax is not multiplied by the values")
        (x, wq, bq), (xk, wk, bk), (xv, wv, bv) = (projection(scaled[0].input[0]), projection(scaled[1].input[0]),
                                                   projection(users[0].input[1]))
        hidden = bq.shape[0]
        if x != xk or x != xv or hidden % heads or any(f is None or f.size != 1 for f in factors):
            raise RewriteError("attention block does not match")
        if not math.isclose(float(factors[0].reshape(-1)[0] * factors[1].reshape(-1)[0]),
                            1 / math.sqrt(hidden // heads), rel_tol=1e-4):
            raise RewriteError("attention scale is not 1 / sqrt(head size)")
        back = consumers[users[0].output[0]]
        if len(back) != 1 or back[0].op_type != "Transpose":
            raise RewriteError("attention output is not transposed back")
        reshape = consumers[back[0].output[0]]
        if len(reshape) != 1 or reshape[0].op_type != "Reshape":
            raise RewriteError("attention output is not reshaped back")
        weight, bias = f"attention_{k}.qkv.weight", f"attention_{k}.qkv.bias"
        graph.initializer.append(numpy_helper.from_array(np.concatenate([bq, bk, bv]).astype(np.float32), bias))
        fused[id(reshape[0])] = [
            helper.make_node("Concat", [wq, wk, wv], [weight], axis=1, name=f"attention_{k}_qkv"),
            helper.make_node("Attention", [x, weight, bias, mask], list(reshape[0].output), name=f"attention_{k}",
                             domain="com.microsoft", num_heads=heads),
        ]
    if len(fused) != layers:
        raise RewriteError(f"expected {layers} attention blocks, found {len(fused)}")

    ordered = [helper.make_node("Cast", ["attention_mask"], [mask], to=TensorProto.INT32, name="attention_mask_int32")]
    for node in nodes:
        ordered.extend(fused.get(id(node), [node]))
    _keep_live(graph, ordered)
    return model.SerializeToString()


def _projection(name: str, producer: dict, array) -> tuple[str, str, object]:
    """(x, W, b) of the Add(MatMul(x, W), b) that `name` is a reshaped or transposed view of."""
    node = producer.get(name)
    while node is not None and node.op_type in ("Reshape", "Transpose"):
        node = producer.get(node.input[0])
    if node is None or node.op_type != "Add":
        raise RewriteError(f"{name} is not a projection")
    for matmul_in, bias_in in ((node.input[0], node.input[1]), (node.input[1], node.input[0])):
        matmul, bias = producer.get(matmul_in), array(bias_in)
        if matmul is not None and matmul.op_type == "MatMul" and bias is not None and bias.ndim == 1:
            return matmul.input[0], matmul.input[1], bias
    raise RewriteError(f"{name} is not MatMul + bias")


def _keep_live(graph, ordered: list) -> None:
    """Set the graph's nodes to ``ordered`` minus what only replaced blocks used (walking back from the outputs),
    and drop initializers nothing reads any more."""
    import onnx

    live = {o.name for o in graph.output}
    kept = []
    for node in reversed(ordered):
        if any(out in live for out in node.output):
            kept.append(node)
            live.update(node.input)
    kept.reverse()
    new_nodes = [onnx.NodeProto.FromString(n.SerializeToString()) for n in kept]
    del graph.node[:]
    graph.node.extend(new_nodes)
    used = [t for t in graph.initializer if t.name in live]
    del graph.initializer[:]
    graph.initializer.extend(used)
