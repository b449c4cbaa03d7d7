"""Local sentence embeddings: ONNX Runtime + tokenizers, no torch, nothing fetched at run time."""
from .onnx import Embedder, load_embedder

__all__ = ["Embedder", "load_embedder"]
