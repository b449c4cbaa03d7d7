"""Local sentence embeddings: ONNX Runtime, no torch, nothing fetched at run time.

The default is all-MiniLM-L6-v2 (English, 384 dimensions, onnx.py); `multilingual` is Google's
Universal Sentence Encoder Multilingual (16 languages, 512 dimensions, multilingual.py); any
BERT-style ONNX folder may be given instead. Changing the model re-embeds what is stored
(engine/memory/reembedding.py)."""

from pathlib import Path

from hindsight.embedding.base import BaseEmbedder as Embedder
from hindsight.embedding.multilingual import MultilingualEmbedder
from hindsight.embedding.onnx import load_bert

__all__ = ["Embedder", "load_embedder", "vector_literal"]

MODELS = ("minilm", "multilingual")


def load_embedder(
    model: str = "minilm", model_dir: Path | None = None, workers: int = 0, quantize: bool = True
) -> Embedder:
    """The configured model: a folder when one is given, else the named bundled model."""
    if model_dir is None and model == "multilingual":
        return MultilingualEmbedder(workers)
    return load_bert(model_dir, workers, quantize)


def vector_literal(v) -> str:
    """pgvector's text form; bulk statements pass vectors as text[] and cast, which needs no
    array codec for the vector type."""
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"
