"""Changing the embedding model re-embeds everything stored before the server serves, whether the
new model has the same dimension or another, or is the same model with int8 quantisation turned
on or off; an unchanged model re-embeds nothing."""

from __future__ import annotations

from tiny_onnx import write_model

from conftest import Server

CHANGED = "EMBEDDING MODEL CHANGED"


def stored(api, bank: str) -> None:
    """Every kind of stored vector is searchable with the model the server runs now."""
    top = api.post(f"/v1/banks/{bank}/recall", json={"query": "spare key flowerpot", "mode": "vector"}).json()[
        "results"
    ]
    assert top and top[0]["text"] == "The spare key is under the blue flowerpot."
    docs = api.post(
        f"/v1/banks/{bank}/documents/query", json={"query": "cello lessons", "mode": "vector", "strictness": 0}
    )
    assert docs.status_code == 200, docs.text
    assert [r["file_path"] for r in docs.json()["results"]] == ["cello.txt"]
    assert api.get(f"/v1/banks/{bank}/mental-models/keys").status_code == 200


def test_changing_the_model_reembeds_every_vector(tmp_path, bank):
    data = tmp_path / "data"
    s = Server({}, data_dir=data).start()
    try:
        with s.http() as api:
            r = api.post(
                f"/v1/banks/{bank}/memories",
                json={
                    "items": [
                        {"content": "The spare key is under the blue flowerpot."},
                        {"content": "Alice plays the cello on Sundays."},
                    ]
                },
            )
            assert r.status_code == 200, r.text
            r = api.post(
                f"/v1/banks/{bank}/documents",
                params={"wait": True},
                json={"files": [{"name": "cello.txt", "text": "Cello lessons are on Tuesday evenings."}]},
            )
            assert r.status_code == 202, r.text
            r = api.post(
                f"/v1/banks/{bank}/mental-models", json={"name": "Keys", "source_query": "Where are the keys?"}
            )
            assert r.status_code == 202, r.text
            stored(api, bank)
        assert CHANGED not in s.log_path.read_text()
    finally:
        s.stop()

    # Another model of another dimension: columns change type, every vector is recomputed.
    tiny = write_model(tmp_path / "tiny", 16)
    tiny_env = {"HINDSIGHT_API_EMBEDDING_MODEL_DIR": str(tiny), "HINDSIGHT_API_EMBEDDING_QUANTIZE": "false"}
    s = Server(tiny_env, data_dir=data).start()
    try:
        log = s.log_path.read_text()
        assert CHANGED in log and "(384 dimensions)" in log
        assert "re-embedded 2 rows of memories" in log and "re-embedded 1 rows of chunks" in log
        assert "re-embedded 1 rows of mental_models" in log
        with s.http() as api:
            assert api.get("/health").json()["embedding_model"] == "onnx:tiny"
            stored(api, bank)
            r = api.post(f"/v1/banks/{bank}/memories", json={"content": "Bob waters the plants on Fridays."})
            assert r.status_code == 200, r.text
    finally:
        s.stop()

    # The same model again: nothing to do.
    s = Server(tiny_env, data_dir=data).start()
    try:
        assert CHANGED not in s.log_path.read_text()
    finally:
        s.stop()

    # Back to the bundled model, in float: 384 dimensions again, all three memories re-embedded.
    s = Server({"HINDSIGHT_API_EMBEDDING_QUANTIZE": "false"}, data_dir=data).start()
    try:
        assert "re-embedded 3 rows of memories" in s.log_path.read_text()
        with s.http() as api:
            assert api.get("/health").json()["embedding_model"] == "all-MiniLM-L6-v2-onnx-int8"
            stored(api, bank)
    finally:
        s.stop()

    # Quantisation on again (the default): same dimension, other vectors, so all re-embedded.
    s = Server({}, data_dir=data).start()
    try:
        assert "re-embedded 3 rows of memories" in s.log_path.read_text()
        with s.http() as api:
            assert api.get("/health").json()["embedding_model"].endswith("+int8-dynamic-per-channel-matmul-v1")
            stored(api, bank)
    finally:
        s.stop()
