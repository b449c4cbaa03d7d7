"""Hindsight's official Python client (hindsight-client 1.1.0, unchanged) against our server.

Every call goes through the client's generated, strictly validated models, so a missing or
mistyped field in one of our responses fails here as it would fail for a user.
"""

from __future__ import annotations

import uuid

import aiohttp
import httpx
import pytest
from hindsight_client import Hindsight
from hindsight_client.hindsight_client import _run_async as run
from hindsight_client_api.exceptions import ApiException

from conftest import ADMIN_KEY, Server, fresh_database, wait_for


@pytest.fixture
def client(server):
    c = Hindsight(base_url=server.url)
    yield c
    c.close()


def test_banks_retain_recall_reflect_list_delete(client, api):
    bank = f"app::user-{uuid.uuid4().hex[:8]}"  # hindsight-google-adk's naming
    profile = client.create_bank(bank, name="Ana", mission="Ana's travel assistant", disposition_skepticism=4)
    assert (profile.bank_id, profile.name, profile.mission) == (bank, "Ana", "Ana's travel assistant")
    assert (profile.disposition.skepticism, profile.disposition.literalism, profile.disposition.empathy) == (4, 3, 3)
    again = client.create_bank(bank, disposition={"skepticism": 2, "literalism": 5, "empathy": 1})
    assert again.name == "Ana" and again.disposition.literalism == 5  # PUT updates what it is given

    r = client.retain(
        bank,
        "Ana moved to Porto last May.",
        timestamp="2024-09-01T10:00:00Z",
        context="chat",
        document_id="chat-1",
        metadata={"channel": "sms"},
        tags=["home"],
        entities=[{"text": "Porto Marathon", "type": "EVENT"}],
    )
    assert r.success and r.items_count == 1 and r.var_async is False
    client.retain_batch(
        bank,
        [
            {"content": "Ana takes the 8:10 train to work.", "tags": ["work"]},
            {"content": "The ferry timetable changed.", "timestamp": "unset"},
        ],
    )

    hit = client.recall(bank, "Where does Ana live?").results[0]
    assert hit.text == "Ana moved to Porto last May." and hit.document_id == "chat-1"
    assert hit.metadata == {"channel": "sms"} and hit.tags == ["home"] and hit.context == "chat"
    assert hit.mentioned_at.startswith("2024-09-01") and hit.occurred_start.startswith("2024-05-01")
    assert {"Ana", "Porto", "Porto Marathon"} <= set(hit.entities)
    # tags as Hindsight defines them: any keeps untagged memories, any_strict does not
    loose = {m.text for m in client.recall(bank, "train ferry Porto", tags=["work"]).results}
    strict = {m.text for m in client.recall(bank, "train ferry Porto", tags=["work"], tags_match="any_strict").results}
    assert strict == {"Ana takes the 8:10 train to work."} and "The ferry timetable changed." in loose
    assert client.recall(bank, "ferry", types=["observation"]).results == []
    traced = client.recall(bank, "ferry", trace=True, budget="low", query_timestamp="2024-10-01T00:00:00")
    assert traced.trace["results"][0]["arms"]

    answer = client.reflect(bank, "Where does Ana live?", include_facts=True)
    assert "Porto" in answer.text and answer.based_on.memories[0].text == "Ana moved to Porto last May."
    fact = answer.based_on.memories[0]
    assert fact.document_id == "chat-1" and fact.tags == ["home"] and fact.occurred_start.startswith("2024-05-01")
    assert client.reflect(bank, "Where does Ana live?").based_on is None  # facts only when asked for

    listed = client.list_memories(bank, limit=2)
    assert listed.total == 3 and len(listed.items) == 2 and listed.items[0].fact_type in ("world", "experience")
    assert client.list_memories(bank, search_query="FERRY").items[0].text == "The ferry timetable changed."
    assert client.list_memories(bank, document_id="chat-1").total == 1
    assert client.list_memories(bank, type="observation").total == 0

    doc = run(client.documents.get_document(bank, "chat-1"))
    assert doc.original_text == "Ana moved to Porto last May." and doc.memory_unit_count == 1 and doc.tags == ["home"]
    timeless = [m for m in api.get(f"/v1/banks/{bank}/memories").json()["memories"] if "ferry" in m["text"]]
    assert timeless[0]["mentioned_at"] is None  # timestamp "unset"

    banks = run(client.banks.list_banks(q=bank))
    assert [b.bank_id for b in banks.banks] == [bank] and banks.banks[0].fact_count == 3
    assert run(client.banks.get_bank_profile(bank)).mission == "Ana's travel assistant"
    deleted = client.delete_bank(bank)
    assert deleted.success and deleted.deleted_count == 3
    assert api.get(f"/v1/banks/{bank}").status_code == 404


def test_async_retain_is_an_operation(client, bank):
    r = client.retain_batch(
        bank, [{"content": f"Fact number {i} about lighthouses."} for i in range(3)], retain_async=True
    )
    assert r.var_async is True and r.operation_id
    ops = client.operations

    def done():
        op = run(ops.get_operation_status(bank, r.operation_id))
        return op if op.status not in ("pending", "processing") else None

    op = wait_for(done)
    assert op.status == "completed" and op.operation_type == "retain" and op.result_metadata["units"] == 3
    assert len(client.recall(bank, "lighthouses").results) == 3
    listed = run(ops.list_operations(bank, status="completed"))
    assert listed.total >= 1 and r.operation_id in [o.id for o in listed.operations]
    with pytest.raises(ApiException) as e:  # already finished: the reference answers 409
        run(ops.cancel_operation(bank, r.operation_id))
    assert e.value.status == 409


def test_mental_models_through_the_client(client, bank):
    client.retain(bank, "Priya leads the search team.", tags=["team"])
    created = client.create_mental_model(
        bank, name="Team", source_query="Who leads which team?", tags=["team"], id="team", max_tokens=512
    )
    assert created.mental_model_id == "team" and created.operation_id

    def ready():
        m = client.get_mental_model(bank, "team")
        return m if m.last_refreshed_at else None

    model = wait_for(ready)
    assert "Priya" in model.content and model.tags == ["team"] and model.max_tokens == 512
    listed = client.list_mental_models(bank)
    assert [m.id for m in listed.items] == ["team"] and listed.items[0].content is None  # metadata by default
    assert client.list_mental_models(bank, detail="content").items[0].content == model.content
    updated = client.update_mental_model(bank, "team", name="Team leads")
    assert updated.name == "Team leads"
    refreshed = client.refresh_mental_model(bank, "team")
    assert refreshed.operation_id and refreshed.status == "queued"
    history = client.get_mental_model_history(bank, "team")
    assert history and history[0]["content"] == model.content
    client.delete_mental_model(bank, "team")
    with pytest.raises(ApiException) as e:
        client.get_mental_model(bank, "team")
    assert e.value.status == 404


async def test_async_forms(server, bank):
    c = Hindsight(base_url=server.url)
    try:
        await c.acreate_bank(bank, name="Async bank")
        await c.aretain(bank, "Kenji repairs vintage radios.", tags=["hobby"])
        await c.aretain_batch(bank, [{"content": "Kenji lives in Osaka."}])
        results = (await c.arecall(bank, "What does Kenji repair?")).results
        assert results[0].text == "Kenji repairs vintage radios."
        answer = await c.areflect(bank, "What does Kenji do?", include_facts=True)
        assert answer.based_on.memories
        assert (await c.alist_memories(bank)).total == 2
        created = await c.acreate_mental_model(bank, name="Kenji", source_query="Who is Kenji?")
        assert (await c.aget_mental_model(bank, created.mental_model_id)).name == "Kenji"
        assert (await c.alist_mental_models(bank)).total == 1
        await c.adelete_bank(bank)
    finally:
        await c.aclose()


def test_errors_reach_the_client_as_4xx_with_detail(client, bank):
    client.retain(bank, "kept")
    for call, status in [
        (lambda: client.recall(bank, ""), 422),
        (lambda: client.recall(bank, "x", max_tokens=10**9), 422),
        (
            lambda: client.retain(
                bank, [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]
            ),
            422,
        ),
        (lambda: client.retain(bank, "x", update_mode="append"), 422),
        (lambda: client.reflect(bank, "q", response_schema={"type": "not-a-type"}), 422),
        (lambda: client.create_mental_model(bank, name="x", source_query="y", id="Bad Id!"), 422),
        (lambda: client.get_mental_model(bank, "nope"), 404),
    ]:
        with pytest.raises(ApiException) as e:
            call()
        assert e.value.status == status and "detail" in e.value.body and "Traceback" not in e.value.body
    assert client.list_memories(bank).total == 1  # nothing stored by the refused calls


def test_llm_features_through_the_client(llm_server, bank):
    c = Hindsight(base_url=llm_server.url)
    try:
        r = c.retain(bank, "Mira adopted a cat. She named it Pixel.", timestamp="2024-03-02T09:00:00Z")
        assert r.success and r.var_async is False
        facts = [m.text for m in c.recall(bank, "What is the cat called?").results]
        assert "Mira named it Pixel." in facts  # async: false waited for fact extraction
        schema = {
            "type": "object",
            "properties": {"pet_name": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["pet_name", "count"],
        }
        answer = c.reflect(bank, "What is Mira's cat called?", response_schema=schema)
        assert set(answer.structured_output) == {"pet_name", "count"} and answer.structured_output_error is None
        assert answer.usage.total_tokens > 0
        bad = c.reflect(bank, "What is the cat called? [[structured-invalid]]", response_schema=schema)
        assert bad.structured_output is None and "the LLM's answer was malformed" in bad.structured_output_error
    finally:
        c.close()


def test_structured_output_needs_an_llm(client, bank):
    client.retain(bank, "Otto plays the oboe.")
    answer = client.reflect(bank, "What does Otto play?", response_schema={"type": "object"})
    assert answer.structured_output is None and "needs an LLM" in answer.structured_output_error


def test_api_keys_apply_to_these_routes(auth_server, bank):
    with auth_server.http(ADMIN_KEY) as admin:
        key = admin.post("/v1/keys", json={"name": "client", "role": "bank", "banks": [bank]}).json()["key"]
    anon = Hindsight(base_url=auth_server.url)
    scoped = Hindsight(base_url=auth_server.url, api_key=key)
    try:
        with pytest.raises(ApiException) as e:
            anon.recall(bank, "x")
        assert e.value.status == 401
        assert scoped.create_bank(bank, name="Mine").name == "Mine"  # its own bank, as a first retain would
        scoped.retain(bank, "A scoped note.")
        assert scoped.recall(bank, "note").results[0].text == "A scoped note."
        # create_bank is hand-written over aiohttp in the client; the rest raise its ApiException
        for call in (
            lambda: scoped.recall(bank + "_other", "x"),
            lambda: scoped.create_bank(bank + "_other"),
            lambda: scoped.retain(bank + "_other", "x"),
            lambda: scoped.delete_bank(bank),
            lambda: scoped.get_bank_config(bank + "_other"),
            lambda: scoped.update_bank_config(bank + "_other", reflect_mission="mine now"),
            lambda: scoped.reset_bank_config(bank + "_other"),
            lambda: run(scoped.banks.get_agent_stats(bank + "_other")),
            lambda: run(scoped.documents.list_document_chunks(bank + "_other", "d")),
        ):
            with pytest.raises((ApiException, aiohttp.ClientResponseError)) as e:
                call()
            assert e.value.status == 403
    finally:
        anon.close()
        scoped.close()


def test_retained_documents_list_and_delete(client, bank):
    client.retain(bank, "Chapter one: the storm.", document_id="book/ch1", tags=["book"])
    client.retain_batch(
        bank,
        [
            {"content": "Part A of the notes.", "document_id": "notes"},
            {"content": "Part B of the notes.", "document_id": "notes"},
        ],
    )
    client.retain(bank, "Chapter one: the calm.", document_id="book/ch1", tags=["book"])  # replaces it
    docs = run(client.documents.list_documents(bank))
    assert docs.total == 2 and {d.id for d in docs.items} == {"book/ch1", "notes"}
    notes = run(client.documents.get_document(bank, "notes"))
    assert notes.original_text == "Part A of the notes.\n\nPart B of the notes." and notes.memory_unit_count == 2
    assert run(client.documents.get_document(bank, "book/ch1")).original_text == "Chapter one: the calm."
    assert [d.id for d in run(client.documents.list_documents(bank, q="STORM")).items] == []
    assert [d.id for d in run(client.documents.list_documents(bank, tags=["book"], tags_match="any_strict")).items] == [
        "book/ch1"
    ]
    gone = run(client.documents.delete_document(bank, "notes"))
    assert gone.success and gone.memory_units_deleted == 2
    assert client.list_memories(bank).total == 1
    with pytest.raises(ApiException) as e:
        run(client.documents.get_document(bank, "notes"))
    assert e.value.status == 404


def test_stats_config_and_chunks_as_the_reference_harness_calls_them(client, bank):
    """Hindsight's own LoCoMo harness reads these beside retain and recall."""
    client.retain_batch(
        bank,
        [
            {"content": "Part A of the notes.", "document_id": "notes/1"},
            {"content": "Part B of the notes.", "document_id": "notes/1"},
            {"content": "Nina bakes sourdough with Omar."},
        ],
    )
    chunks = run(client.documents.list_document_chunks(bank, "notes/1"))
    assert chunks.total == 2 and [(c.chunk_index, c.chunk_text) for c in chunks.items] == [
        (0, "Part A of the notes."),
        (1, "Part B of the notes."),
    ]
    assert all(c.document_id == "notes/1" and c.bank_id == bank for c in chunks.items)
    page = run(client.documents.list_document_chunks(bank, "notes/1", limit=1, offset=1))
    assert [(c.chunk_index, c.chunk_text) for c in page.items] == [(1, "Part B of the notes.")] and page.total == 2
    with pytest.raises(ApiException) as e:
        run(client.documents.list_document_chunks(bank, "no-such-document"))
    assert e.value.status == 404

    stats = run(client.banks.get_agent_stats(bank))
    assert stats.total_nodes == 3 and stats.total_documents == 1 and stats.nodes_by_fact_type == {"world": 3}
    assert stats.links_by_link_type["entity"] >= 2 and stats.total_links == sum(stats.links_by_link_type.values())
    assert stats.pending_operations == stats.failed_operations == 0 and stats.last_memory_write_at

    config = client.get_bank_config(bank)
    assert config["overrides"] == {} and config["config"]["disposition_empathy"] == 3
    updated = client.update_bank_config(
        bank, reflect_mission="Answer briefly.", disposition_empathy=5, retain_extraction_mode="verbose"
    )
    assert updated["overrides"] == {
        "reflect_mission": "Answer briefly.",
        "disposition_empathy": 5,
        "retain_extraction_mode": "verbose",
    }
    assert updated["not_applied"] == ["retain_extraction_mode"]  # kept and reported, not acted on
    assert client.get_bank_config(bank)["config"]["retain_extraction_mode"] == "verbose"
    with httpx.Client(base_url=client._base_url) as h:
        profile = h.get(f"/v1/default/banks/{bank}/profile").json()  # the settings we act on took
        assert profile["mission"] == "Answer briefly." and profile["disposition"]["empathy"] == 5
        # bad values are refused with the setting's name
        bad = h.patch(f"/v1/default/banks/{bank}/config", json={"updates": {"disposition_empathy": 9}})
        assert bad.status_code in (400, 422) and "disposition_empathy" in bad.text
        bad = h.patch(f"/v1/default/banks/{bank}/config", json={"updates": {"Not A Key": 1}})
        assert bad.status_code in (400, 422) and "setting name" in bad.text
        env_form = h.patch(
            f"/v1/default/banks/{bank}/config", json={"updates": {"HINDSIGHT_API_RECALL_MAX_TOKENS": 2048}}
        )
        assert env_form.json()["overrides"]["recall_max_tokens"] == 2048
        removed = h.patch(f"/v1/default/banks/{bank}/config", json={"updates": {"recall_max_tokens": None}})
        assert "recall_max_tokens" not in removed.json()["overrides"]
    reset = client.reset_bank_config(bank)
    assert reset["overrides"] == {} and reset["config"]["reflect_mission"] == "Answer briefly."


def test_cancelling_a_pending_operation(pg_url, bank):
    """DELETE .../operations/{id} cancels: a server without a worker keeps an async retain pending."""
    # A database of its own: another server's worker on the shared one would run the retain.
    db = fresh_database(pg_url, "no_worker")
    s = Server({"HINDSIGHT_API_DATABASE_URL": db, "HINDSIGHT_API_WORKER_CONCURRENCY": "0"}).start()
    c = Hindsight(base_url=s.url)
    try:
        r = c.retain(bank, "Queued and never stored.", retain_async=True)
        ops = c.operations
        pending = run(ops.list_operations(bank, status="pending"))
        assert [o.id for o in pending.operations] == [r.operation_id] and pending.operations[0].status == "pending"
        cancelled = run(ops.cancel_operation(bank, r.operation_id))
        assert cancelled.success and "cancelled" in cancelled.message
        assert run(ops.get_operation_status(bank, r.operation_id)).status == "cancelled"
        assert c.list_memories(bank).total == 0
    finally:
        c.close()
        s.stop()
