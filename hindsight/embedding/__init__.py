"""Local sentence embeddings: ONNX Runtime + tokenizers, no torch, nothing fetched at run time."""

from .onnx import Embedder, load_embedder

__all__ = ["Embedder", "load_embedder", "vector_literal"]


def vector_literal(v) -> str:
    """pgvector's text form; bulk statements pass vectors as text[] and cast, which needs no
    array codec for the vector type."""
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"
