"""Changing the embedding model re-embeds everything stored before the server serves, whether the
new model has the same dimension or another, or is the same model with int8 quantisation turned
on or off; an unchanged model re-embeds nothing. Turning the Chinese gloss on or off re-embeds the
texts holding Chinese alone."""

from __future__ import annotations

from tiny_onnx import write_model

from hindsight.language.gloss import GLOSS_VERSION

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
            assert api.get("/health").json()["embedding_model"] == f"all-MiniLM-L6-v2-onnx-int8{GLOSS_VERSION}"
            stored(api, bank)
    finally:
        s.stop()

    # Quantisation on again (the default): same dimension, other vectors, so all re-embedded.
    s = Server({}, data_dir=data).start()
    try:
        assert "re-embedded 3 rows of memories" in s.log_path.read_text()
        with s.http() as api:
            name = api.get("/health").json()["embedding_model"]
            assert name.endswith(f"+int8-dynamic-per-channel-matmul-v1{GLOSS_VERSION}")
            stored(api, bank)
    finally:
        s.stop()


def test_turning_the_chinese_gloss_off_and_on_reembeds_chinese_texts_alone(tmp_path, bank):
    data = tmp_path / "data"
    lines = [
        "The spare key is under the blue flowerpot.",
        "赵磊：我上个月从收容所领养了一只小猫。",  # Zhao Lei: I adopted a kitten last month
        "周强：明天可能会下大雨。",  # Zhou Qiang: it may rain heavily tomorrow
        "田中：東京でラーメンを食べた。",  # Japanese, with a speaker in Han characters
    ]

    def pet_owner(api) -> str:
        r = api.post(f"/v1/banks/{bank}/recall", json={"query": "谁家里有宠物？", "mode": "vector", "top_k": 1})
        assert r.status_code == 200, r.text
        return r.json()["results"][0]["text"]

    s = Server({}, data_dir=data).start()
    try:
        with s.http() as api:
            r = api.post(f"/v1/banks/{bank}/memories", json={"items": [{"content": t} for t in lines]})
            assert r.status_code == 200, r.text
            r = api.post(
                f"/v1/banks/{bank}/documents",
                params={"wait": True},
                json={"files": [{"name": "假期.txt", "text": "员工每年享有十五天带薪年假。"}]},
            )
            assert r.status_code == 202, r.text
            assert pet_owner(api) == lines[1]
    finally:
        s.stop()

    for env in ({"HINDSIGHT_API_EMBEDDING_CHINESE_GLOSS": "false"}, {}):
        s = Server(env, data_dir=data).start()
        try:
            log = s.log_path.read_text()
            assert "CHINESE GLOSS CHANGED" in log and CHANGED not in log
            assert "re-embedded 3 rows of memories" in log and "re-embedded 1 rows of chunks" in log
            with s.http() as api:
                name = api.get("/health").json()["embedding_model"]
                assert name.endswith(GLOSS_VERSION) is (env == {})
                if env == {}:
                    assert pet_owner(api) == lines[1]
        finally:
            s.stop()
