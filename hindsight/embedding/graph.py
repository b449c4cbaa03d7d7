"""Exact rewrites of an exported BERT graph that ONNX Runtime's own optimiser misses.

A one-text run of MiniLM spends about as long in the small element-wise nodes around the matrix
products as in the products themselves, so each node removed is time saved on every retain and
every query. Two patterns of the torch exporter are worth rewriting (LoCoMo turns, one thread,
paired runs; README):

- `Where(IsNaN(softmax), 0, softmax)` after each attention softmax guards against a row whose keys
  are all masked. Every row keeps at least its own text's [CLS] and [SEP] keys, so the guard is an
  identity: dropping it leaves every vector bit for bit the same (-0.5 ms a text).
- `x * (0.5 * (1 + erf(x / sqrt 2)))`, the exact GELU, spelled as five nodes that ORT's GELU fusion
  does not recognise. One `com.microsoft.Gelu` node computes the same function (-0.6 ms a text; it
  differs in float rounding only, vectors within cosine 0.995 and 0.99998 on average).

Each rewrite checks the whole pattern and leaves anything else alone, so another BERT-style model
(HINDSIGHT_API_EMBEDDING_MODEL_DIR) is simply used as it is.
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper


def simplify(model: onnx.ModelProto) -> dict[str, int]:
    """Rewrite `model` in place; returns how many of each pattern were rewritten."""
    return {"nan_guards": _drop_nan_guards(model.graph), "gelus": _fuse_gelus(model)}


class _Index:
    """Producers, consumers and scalar constants of a graph, for pattern matching."""

    def __init__(self, graph: onnx.GraphProto):
        self.producer = {o: n for n in graph.node for o in n.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.scalars = {
            t.name: float(numpy_helper.to_array(t).reshape(-1)[0])
            for t in graph.initializer if int(np.prod(t.dims)) == 1
        }
        for n in graph.node:  # exporters also write constants as nodes
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
                value = numpy_helper.to_array(n.attribute[0].t)
                if value.size == 1:
                    self.scalars[n.output[0]] = float(value.reshape(-1)[0])

    def only_consumer(self, name: str, op_type: str) -> onnx.NodeProto | None:
        users = self.consumers.get(name, [])
        return users[0] if len(users) == 1 and users[0].op_type == op_type else None

    def is_scalar(self, name: str, value: float) -> bool:
        return name in self.scalars and math.isclose(self.scalars[name], value, rel_tol=1e-6)


def _drop_nan_guards(graph: onnx.GraphProto) -> int:
    idx = _Index(graph)
    drop, rename = set(), {}
    for where in graph.node:
        if where.op_type != "Where" or len(where.input) != 3:
            continue
        isnan = idx.producer.get(where.input[0])
        softmax = idx.producer.get(where.input[2])
        if (isnan is None or isnan.op_type != "IsNaN" or softmax is None or softmax.op_type != "Softmax"
                or isnan.input[0] != where.input[2] or not idx.is_scalar(where.input[1], 0.0)
                or len(idx.consumers[isnan.output[0]]) != 1):
            continue
        drop |= {id(where), id(isnan)}
        rename[where.output[0]] = where.input[2]
    if any(o.name in rename for o in graph.output):
        return 0  # a guarded softmax that is itself a graph output: leave it
    _replace(graph, drop, {})
    for n in graph.node:
        for i, name in enumerate(n.input):
            if name in rename:
                n.input[i] = rename[name]
    return len(rename)


def _fuse_gelus(model: onnx.ModelProto) -> int:
    graph = model.graph
    idx = _Index(graph)
    drop, swap = set(), {}
    for erf in graph.node:
        if erf.op_type != "Erf":
            continue
        div = idx.producer.get(erf.input[0])
        if div is None or div.op_type != "Div" or not idx.is_scalar(div.input[1], math.sqrt(2)):
            continue
        x = div.input[0]
        add = idx.only_consumer(erf.output[0], "Add")
        half = add and idx.only_consumer(add.output[0], "Mul")
        out = half and idx.only_consumer(half.output[0], "Mul")
        if not (add and half and out):
            continue
        if (not _other_is(idx, add, erf.output[0], 1.0) or not _other_is(idx, half, add.output[0], 0.5)
                or sorted(out.input) != sorted([x, half.output[0]])
                or len(idx.consumers[div.output[0]]) != 1):
            continue
        drop |= {id(div), id(erf), id(add), id(half)}
        swap[id(out)] = helper.make_node("Gelu", [x], [out.output[0]], domain="com.microsoft", name=f"{out.name}_gelu")
    if swap:
        _replace(graph, drop, swap)
        if not any(o.domain == "com.microsoft" for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(swap)


def _other_is(idx: _Index, node: onnx.NodeProto, known: str, value: float) -> bool:
    """Whether a binary node's input other than `known` is the constant `value`."""
    other = [n for n in node.input if n != known]
    return len(node.input) == 2 and len(other) == 1 and idx.is_scalar(other[0], value)


def _replace(graph: onnx.GraphProto, drop: set[int], swap: dict[int, onnx.NodeProto]) -> None:
    """Remove the nodes in `drop` and put each node of `swap` where the node it replaces was
    (the graph stays topologically sorted)."""
    kept = [swap.get(id(n), n) for n in graph.node if id(n) not in drop]
    del graph.node[:]
    graph.node.extend(kept)
    used = {i for n in graph.node for i in n.input}
    unused = [t for t in graph.initializer if t.name not in used]
    for t in unused:
        graph.initializer.remove(t)
