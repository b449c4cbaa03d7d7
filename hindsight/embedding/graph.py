"""Rewrites of an exported BERT graph that ONNX Runtime's own optimiser misses.

A one-text run of MiniLM spent about as long in the small nodes around the matrix products as in
the products themselves (315 nodes, 36 of them products), so each node removed is time saved on
every retain and every query. Three patterns of the torch exporter are rewritten (the graph goes
to 117 nodes; bench/README.md, "Embedder graph rewrites", has the paired one-thread timings):

- `Where(IsNaN(softmax), 0, softmax)` after each attention softmax guards against a row whose keys
  are all masked. Every row keeps at least its own text's [CLS] and [SEP] keys, so the guard is an
  identity.
- `x * (0.5 * (1 + erf(x / sqrt 2)))`, the exact GELU, spelled as five nodes that ORT's GELU fusion
  does not recognise, becomes one `com.microsoft.Gelu`.
- Scaled dot-product attention, spelled as ~25 reshape, transpose, slice and shape nodes around
  two products, becomes one `com.microsoft.MultiHeadAttention` with the attention mask as its key
  padding mask.

The fused nodes compute the same functions and differ in float rounding only. Pattern matching
cannot prove that, so quantize.py keeps the rewritten graph only if `same_function` finds the same
vectors for a padded probe batch; another BERT-style model (HINDSIGHT_API_EMBEDDING_MODEL_DIR) whose
graph matches nothing, or matches wrongly, is quantised as it is.

Apart from these, `int8_tables` keeps a word-vector table in int8 when it is exactly int8 times a
scale per row, as the shipped model's is: folded, it would be float32, four times the bytes every
server holds, where a lookup of the int8 rows, then the scaling, computes the very same floats
(bench/README.md, "Embedder: the word table stays int8"). It checks
that exactness itself, so it needs no probe.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper


def simplify(model: onnx.ModelProto) -> dict[str, int]:
    """Rewrite `model` in place; returns how many of each pattern were rewritten."""
    done = {
        "nan_guards": _drop_nan_guards(model.graph),
        "gelus": _fuse_gelus(model),
        "attentions": _fuse_attention(model),
    }
    _drop_dead(model.graph)
    return done


TABLE_MIN_BYTES = 1 << 20  # smaller tables (token types, positions) are not worth three more nodes


def int8_tables(model: onnx.ModelProto) -> int:
    """Replace each float32 lookup table read by a Gather of a graph input (the word vectors) that
    is exactly int8 times a per-row scale with those int8 rows and scales, gathered and multiplied
    back at run time; returns how many. Lossless: a table that is not exactly of that form (a
    float model's) is left alone, so the vectors stay bit for bit the same."""
    graph = model.graph
    idx = _Index(graph)
    inputs = {i.name for i in graph.input}
    tables = {t.name: t for t in graph.initializer}
    done, nodes = 0, []
    for node in idx.nodes:
        table = None
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[1] in inputs:
            only_here = len(idx.consumers.get(node.input[0], [])) == 1
            table = tables.get(node.input[0]) if only_here and _attr(node, "axis") in ((), 0) else None
        rows = _int8_rows(table) if table is not None else None
        if table is None or rows is None:
            nodes.append(node)
            continue
        q, scale = rows
        name, out, ids = table.name, node.output[0], node.input[1]
        graph.initializer.remove(table)
        graph.initializer.extend(
            [numpy_helper.from_array(q, f"{name}_int8"), numpy_helper.from_array(scale, f"{name}_scale8")]
        )
        nodes += [
            helper.make_node("Gather", [f"{name}_int8", ids], [f"{out}_int8"], axis=0),
            helper.make_node("Gather", [f"{name}_scale8", ids], [f"{out}_scale8"], axis=0),
            helper.make_node("Cast", [f"{out}_int8"], [f"{out}_float"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", [f"{out}_float", f"{out}_scale8"], [out]),
        ]
        done += 1
    del graph.node[:]
    graph.node.extend(nodes)
    return done


def _int8_rows(table: onnx.TensorProto) -> tuple[np.ndarray, np.ndarray] | None:
    """(int8 rows, float32 scale per row) that multiply back to exactly `table`, or None."""
    if table.data_type != onnx.TensorProto.FLOAT or len(table.dims) != 2:
        return None
    if int(np.prod(table.dims)) * 4 < TABLE_MIN_BYTES:
        return None
    values = numpy_helper.to_array(table)
    scale = (np.abs(values).max(axis=1, keepdims=True) / 127).astype(np.float32)
    scale[scale == 0] = 1
    q = np.rint(values / scale)
    if np.abs(q).max() > 127:
        return None
    q = q.astype(np.int8)
    return (q, scale) if np.array_equal(q.astype(np.float32) * scale, values) else None


def same_function(original: str, rewritten: str, min_cosine: float = 0.9999) -> bool:
    """Whether two model files give the same mean-pooled vectors for a padded probe batch (two
    inputs of different lengths), so a rewrite that matched a pattern it misread is never used."""
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 20000, size=(2, 16), dtype=np.int64)
    mask = np.ones_like(ids)
    mask[1, 9:] = 0
    pooled = []
    for path in (original, rewritten):
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = {i.name for i in sess.get_inputs()}
        if not names <= {"input_ids", "attention_mask", "token_type_ids"}:
            return False
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = sess.run(None, {k: v for k, v in feed.items() if k in names})[0]
        v = (hidden * mask[..., None]).sum(1)
        pooled.append(v / np.linalg.norm(v, axis=1, keepdims=True))
    return bool(((pooled[0] * pooled[1]).sum(1) >= min_cosine).all())


class _Index:
    """Producers, consumers and scalar constants of a graph, for pattern matching. `nodes` holds
    the node objects the rewrites refer to by id() (protobuf makes a new wrapper per access)."""

    def __init__(self, graph: onnx.GraphProto):
        self.nodes = list(graph.node)
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in self.nodes:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.scalars = {
            t.name: float(numpy_helper.to_array(t).reshape(-1)[0])
            for t in graph.initializer
            if int(np.prod(t.dims)) == 1
        }
        self.widths = {t.name: int(t.dims[0]) for t in graph.initializer if len(t.dims) == 1}
        for n in self.nodes:  # exporters also write constants as nodes
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
    for where in idx.nodes:
        if where.op_type != "Where" or len(where.input) != 3:
            continue
        isnan = idx.producer.get(where.input[0])
        softmax = idx.producer.get(where.input[2])
        if (
            isnan is None
            or isnan.op_type != "IsNaN"
            or softmax is None
            or softmax.op_type != "Softmax"
            or isnan.input[0] != where.input[2]
            or not idx.is_scalar(where.input[1], 0.0)
            or len(idx.consumers[isnan.output[0]]) != 1
        ):
            continue
        drop |= {id(where), id(isnan)}
        rename[where.output[0]] = where.input[2]
    if any(o.name in rename for o in graph.output):
        return 0  # a guarded softmax that is itself a graph output: leave it
    for n in idx.nodes:
        for i, name in enumerate(n.input):
            if name in rename:
                n.input[i] = rename[name]
    _replace(graph, idx, drop, {})
    return len(rename)


def _fuse_gelus(model: onnx.ModelProto) -> int:
    graph = model.graph
    idx = _Index(graph)
    drop, swap = set(), {}
    for erf in idx.nodes:
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
        if (
            not _other_is(idx, add, erf.output[0], 1.0)
            or not _other_is(idx, half, add.output[0], 0.5)
            or sorted(out.input) != sorted([x, half.output[0]])
            or len(idx.consumers[div.output[0]]) != 1
        ):
            continue
        drop |= {id(div), id(erf), id(add), id(half)}
        swap[id(out)] = helper.make_node("Gelu", [x], [out.output[0]], domain="com.microsoft", name=f"{out.name}_gelu")
    if swap:
        _replace(graph, idx, drop, swap)
        if not any(o.domain == "com.microsoft" for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(swap)


def _fuse_attention(model: onnx.ModelProto) -> int:
    """Scaled dot-product attention, exported as ~25 reshape, transpose, slice and shape nodes
    around two matrix products, becomes one `com.microsoft.MultiHeadAttention` over the query,
    key and value projections with the attention mask as a key padding mask."""
    graph = model.graph
    if "attention_mask" not in {i.name for i in graph.input}:
        return 0
    idx = _Index(graph)
    mask = "attention_mask_int32"
    swap = {}
    for softmax in idx.nodes:
        if softmax.op_type != "Softmax":
            continue
        add = idx.producer.get(softmax.input[0])
        scores = add and next(
            (idx.producer[i] for i in add.input if i in idx.producer and idx.producer[i].op_type == "MatMul"), None
        )
        mixed = idx.only_consumer(softmax.output[0], "MatMul")
        back = mixed and idx.only_consumer(mixed.output[0], "Transpose")
        out = back and idx.only_consumer(back.output[0], "Reshape")
        if not (
            add
            and add.op_type == "Add"
            and scores
            and out
            and mixed
            and back
            and mixed.input[0] == softmax.output[0]
            and list(_attr(back, "perm")) == [0, 2, 1, 3]
        ):
            continue
        (q, q_scale), (k, k_scale), (v, v_scale) = (
            _projection(idx, scores.input[0]),
            _projection(idx, scores.input[1]),
            _projection(idx, mixed.input[1]),
        )
        hidden = _bias_width(idx, q)
        if q is None or k is None or v is None or hidden is None or v_scale != 1.0:
            continue
        head = round(1 / (q_scale * k_scale) ** 2)
        if head < 1 or hidden % head or not math.isclose(q_scale * k_scale, head**-0.5, rel_tol=1e-4):
            continue
        swap[id(out)] = helper.make_node(
            "MultiHeadAttention",
            [q, k, v, "", mask],
            [out.output[0]],
            domain="com.microsoft",
            name=f"{out.name}_attention",
            num_heads=hidden // head,
            scale=q_scale * k_scale,
        )
    if swap:
        _replace(graph, idx, set(), swap)
        graph.node.insert(0, helper.make_node("Cast", ["attention_mask"], [mask], to=onnx.TensorProto.INT32))
        if not any(o.domain == "com.microsoft" for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(swap)


def _projection(idx: _Index, name: str) -> tuple[str | None, float]:
    """Walk from one side of an attention product back through the head-splitting reshapes and
    transposes and any scalar scaling, to the [batch, tokens, hidden] projection (an Add of its
    bias); returns it and the product of the scalars."""
    scale = 1.0
    for _ in range(12):
        node = idx.producer.get(name)
        if node is None:
            return None, scale
        if node.op_type == "Add":
            return name, scale
        if node.op_type in ("Reshape", "Transpose"):
            name = node.input[0]
        elif node.op_type == "Mul":
            const = [i for i in node.input if i in idx.scalars]
            if len(const) != 1:
                return None, scale
            scale *= idx.scalars[const[0]]
            name = next(i for i in node.input if i != const[0])
        else:
            return None, scale
    return None, scale


def _bias_width(idx: _Index, name: str | None) -> int | None:
    """The width of the bias added to make `name` (the projection's hidden size)."""
    node = idx.producer.get(name) if name else None
    widths = [idx.widths[i] for i in node.input if i in idx.widths] if node is not None else []
    return widths[0] if len(widths) == 1 else None


def _attr(node: onnx.NodeProto, name: str):
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), ())


def _drop_dead(graph: onnx.GraphProto) -> None:
    """Remove nodes none of whose outputs is used (what the rewrites left behind)."""
    wanted = {o.name for o in graph.output}
    while True:
        idx = _Index(graph)
        used = wanted | set(idx.consumers)
        dead = {id(n) for n in idx.nodes if not any(o in used for o in n.output if o)}
        if not dead:
            return
        _replace(graph, idx, dead, {})


def _other_is(idx: _Index, node: onnx.NodeProto, known: str, value: float) -> bool:
    """Whether a binary node's input other than `known` is the constant `value`."""
    other = [n for n in node.input if n != known]
    return len(node.input) == 2 and len(other) == 1 and idx.is_scalar(other[0], value)


def _replace(graph: onnx.GraphProto, idx: _Index, drop: set[int], swap: dict[int, onnx.NodeProto]) -> None:
    """Remove the nodes in `drop` and put each node of `swap` where the node it replaces was
    (the graph stays topologically sorted)."""
    kept = [swap.get(id(n), n) for n in idx.nodes if id(n) not in drop]
    del graph.node[:]
    graph.node.extend(kept)
    used = {i for n in graph.node for i in n.input}
    unused = [t for t in graph.initializer if t.name not in used]
    for t in unused:
        graph.initializer.remove(t)
