"""A tiny embedding model written as ONNX bytes by hand, so tests can switch models (and
dimensions) offline without the `onnx` package: a word-vector lookup (Gather) over the MiniLM
vocabulary, which the embedder mean-pools like any BERT-style model."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from hindsight.embedding.onnx import VENDORED

VOCAB = 30522  # bert-base-uncased, the tokenizer the bundled model uses
FLOAT, INT64 = 1, 7


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, data: bytes | str) -> bytes:
    data = data.encode() if isinstance(data, str) else data
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _value_info(name: str, elem: int, dims: list) -> bytes:
    shape = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, elem) + _bytes(2, shape)))


def write_model(folder: Path, dim: int, seed: int = 0) -> Path:
    """model.onnx (input_ids, attention_mask -> last_hidden_state of `dim`) and the bundled
    tokenizer.json in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    table = np.random.default_rng(seed).standard_normal((VOCAB, dim)).astype("<f4")
    init = _int(1, VOCAB) + _int(1, dim) + _int(2, FLOAT) + _bytes(8, "E") + _bytes(9, table.tobytes())
    node = (
        _bytes(1, "E")
        + _bytes(1, "input_ids")
        + _bytes(2, "last_hidden_state")
        + _bytes(3, "lookup")
        + _bytes(4, "Gather")
    )
    graph = (
        _bytes(1, node)
        + _bytes(2, "tiny")
        + _bytes(5, init)
        + _bytes(11, _value_info("input_ids", INT64, ["batch", "seq"]))
        + _bytes(11, _value_info("attention_mask", INT64, ["batch", "seq"]))
        + _bytes(12, _value_info("last_hidden_state", FLOAT, ["batch", "seq", dim]))
    )
    model = _int(1, 8) + _bytes(8, _bytes(1, "") + _int(2, 13)) + _bytes(7, graph)
    (folder / "model.onnx").write_bytes(model)
    shutil.copy(VENDORED / "tokenizer.json", folder / "tokenizer.json")
    return folder
