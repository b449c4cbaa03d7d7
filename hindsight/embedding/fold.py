"""Constant folding of an ONNX graph, which both the embedder (a session holding only the folded
weights) and the int8 quantiser (folding before it quantises) need."""

from __future__ import annotations


def fold(source, target) -> None:
    """Write `source` to `target` with its constant sub-graphs folded (int8 -> float32 weights)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.enable_cpu_mem_arena = False
    opts.optimized_model_filepath = str(target)
    ort.InferenceSession(str(source), opts, providers=["CPUExecutionProvider"])
