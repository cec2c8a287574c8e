"""Graph rewrites for the MiniLM ONNX export that onnxruntime does not make on its own.

The PyPI model is a torch export: after every attention softmax it guards against NaN rows
(``Where(IsNaN(p), 0, p)``), and its GELU is five elementwise nodes around ``Erf``. onnxruntime's
optimiser fuses neither, so on 2 cores the guards cost ~7% of inference and the unfused GELU ~5%.
The rewrite removes the guards (a softmax row is NaN only when every key is masked; [CLS] never is)
and replaces each GELU with one ``com.microsoft`` ``Gelu`` (which onnxruntime then fuses with its bias).
Outputs are unchanged up to float rounding; :func:`rewrite` refuses a graph that does not match.
"""

from __future__ import annotations

import math
from collections import defaultdict

#: Bump when the rewrite changes what it writes (cached graphs carry it in their file name).
VERSION = 1


class RewriteError(ValueError):
    """The graph is not the export this rewrite was written for."""


def rewrite(data: bytes, layers: int = 6) -> bytes:
    """The serialized model with the NaN guards removed and the GELUs fused; ``layers`` of each expected."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load_from_string(data)
    graph = model.graph
    # one list of node objects for everything below: ids stay valid while it holds them
    nodes = list(graph.node)
    producer = {out: node for node in nodes for out in node.output}
    consumers: dict[str, list] = defaultdict(list)
    for node in nodes:
        for name in node.input:
            consumers[name].append(node)
    initializers = {t.name: t for t in graph.initializer}

    def constant(name: str) -> float | None:
        """The scalar value of an initializer or Constant node, else None."""
        if name in initializers:
            arr = numpy_helper.to_array(initializers[name])
        elif name in producer and producer[name].op_type == "Constant" and producer[name].attribute:
            attr = producer[name].attribute[0]
            if not attr.HasField("t"):
                return None
            arr = numpy_helper.to_array(attr.t)
        else:
            return None
        return float(arr.reshape(-1)[0]) if arr.size == 1 else None

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
