"""The rest of Hindsight's API (issue 52) through its own Python client (hindsight-client 1.1.0,
unchanged), against a real server with the stub LLM: every answer goes through the client's
generated, strictly validated models, so a missing or mistyped field fails here as it would for
a user. Over HTTP, with a bank-scoped key: what writes is refused to a read-only one."""

from __future__ import annotations

import io
import json
import tempfile
import uuid
import zipfile
from pathlib import Path

import pytest
from hindsight_client import Hindsight
from hindsight_client.hindsight_client import _run_async as run
from hindsight_client_api.api.bank_templates_api import BankTemplatesApi
from hindsight_client_api.exceptions import ApiException
from hindsight_client_api.models import (
    AddBackgroundRequest,
    BankTemplateManifest,
    ConsolidationRequest,
    DispositionTraits,
    DryRunExtractRequest,
    UpdateDispositionRequest,
    UpdateDocumentRequest,
)

from conftest import ADMIN_KEY, AUTH_EXT, Server, fresh_database, llm_env, wait_for
from support import make_key


@pytest.fixture(scope="module")
def keyed(pg_url, stub):
    env = llm_env(stub, fresh_database(pg_url, "client_surface"))
    s = Server({**env, "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT, "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY}).start()
    yield s
    s.stop()


@pytest.fixture
def bank():
    return f"app::user-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def keys(keyed, bank):
    with keyed.http(ADMIN_KEY) as admin:
        return make_key(admin, role="bank", banks=[bank])["key"], make_key(
            admin, role="bank", banks=[bank], access="read"
        )["key"]


def _done(client: Hindsight, bank: str, op_id: str):
    def finished():
        status = run(client.operations.get_operation_status(bank, op_id))
        return status if status.status in ("completed", "failed", "cancelled") else None

    return wait_for(finished, timeout=60)


def test_profile_templates_and_consolidation(keyed, bank, keys):
    writer, _ = keys
    c = Hindsight(base_url=keyed.url, api_key=writer)
    try:
        c.create_bank(bank, name="Ana")
        profile = run(
            c.banks.update_bank_disposition(
                bank, UpdateDispositionRequest(disposition=DispositionTraits(skepticism=5, literalism=2, empathy=4))
            )
        )
        assert (profile.disposition.skepticism, profile.disposition.empathy) == (5, 4)
        bg = run(c.banks.add_bank_background(bank, AddBackgroundRequest(content="I help Ana travel.")))
        assert bg.mission == "I help Ana travel."
        c.retain(bank, "Ana lives in Porto.")
        model = c.create_mental_model(bank, "Home", "Where does Ana live?")
        templates = BankTemplatesApi(c._api_client)
        manifest = run(templates.export_bank_template(bank))
        assert manifest.version == "1" and manifest.bank.reflect_mission == "I help Ana travel."
        assert [m.id for m in manifest.mental_models] == [model.mental_model_id]
        other = bank + "-copy"
        with keyed.http(ADMIN_KEY) as admin:
            make_key(admin, role="bank", banks=[other])
        admin_client = Hindsight(base_url=keyed.url, api_key=ADMIN_KEY)
        try:
            done = run(
                BankTemplatesApi(admin_client._api_client).import_bank_template(
                    other, BankTemplateManifest.from_dict(manifest.to_dict())
                )
            )
            assert done.mental_models_created == [model.mental_model_id] and done.config_applied
        finally:
            admin_client.close()
        schema = run(templates.get_bank_template_schema())
        assert "version" in schema["properties"]
        consolidation = run(c.banks.trigger_consolidation(bank, consolidation_request=ConsolidationRequest()))
        assert _done(c, bank, consolidation.operation_id).status == "completed"
        assert run(c.banks.recover_consolidation(bank)).retried_count == 0
        assert run(c.memory.list_observation_scopes(bank)).scopes == []
        assert run(c.banks.clear_observations(bank)).success
        health = run(c.banks.test_bank_llm(bank))
        assert [(o.operation, o.status) for o in health.operations] == [
            ("retain", "connected"),
            ("consolidation", "connected"),
            ("reflect", "connected"),
        ]
    finally:
        c.close()


def test_memories_documents_chunks_and_operations(keyed, bank, keys):
    writer, reader = keys
    c = Hindsight(base_url=keyed.url, api_key=writer)
    try:
        c.retain(bank, "Ana lives in Porto. She works at a bakery.", document_id="notes-1", tags=["a"])
        facts = run(
            c.memory.dry_run_extract_memories(bank, DryRunExtractRequest.from_dict({"content": "Bruno plays chess."}))
        )
        assert [f.text for f in facts.facts] == ["Bruno plays chess."] and facts.usage.total_tokens > 0
        assert run(c.documents.update_document(bank, "notes-1", UpdateDocumentRequest(tags=["b"]))).success
        assert run(c.documents.get_document(bank, "notes-1")).tags == ["b"]
        chunks = run(c.documents.list_document_chunks(bank, "notes-1"))
        chunk = run(c.documents.get_chunk(chunks.items[0].chunk_id))
        assert chunk.document_id == "notes-1" and chunk.chunk_index == 0
        again = run(c.documents.reprocess_document(bank, "notes-1"))
        assert again.success and again.items_count == 1
        assert _done(c, bank, again.operation_id).status == "completed"
        memory_id = c.list_memories(bank).items[0].id
        assert run(c.memory.clear_memory_observations(bank, memory_id)).deleted_count == 0
        with pytest.raises(ApiException) as e:
            run(c.operations.retry_operation(bank, again.operation_id))
        assert e.value.status == 409
        assert run(c.operations.delete_operation(bank, again.operation_id)).success
        model = c.create_mental_model(bank, "Work", "Where does Ana work?")
        _done(c, bank, model.operation_id)
        dry = c.dry_run_refresh_mental_model(bank, model.mental_model_id)
        assert dry.effective_mode == "full" and dry.current_content and dry.candidate_content
        cleared = c.clear_mental_model(bank, model.mental_model_id)
        assert cleared.id == model.mental_model_id
        files = c.retain_files(bank, [_write("trip.md", b"# Trip\n\nAna takes the night train to Vigo.")])
        assert _done(c, bank, files.operation_ids[0]).status == "completed"
        archive = c.export_documents(bank, poll_interval=0.2)
        names = zipfile.ZipFile(io.BytesIO(archive)).namelist()
        assert "manifest.json" in names and len([n for n in names if n.startswith("documents/")]) == 2
        submitted = run(c.document_transfer.import_documents(bank, ("t.zip", archive), on_conflict="new-id"))
        imported = _done(c, bank, submitted.operation_id)
        assert imported.status == "completed" and imported.result_metadata["documents_imported"] == 2
        cleared_all = run(c.memory.clear_bank_memories(bank))
        assert cleared_all.success and cleared_all.deleted_count > 0
        assert c.list_memories(bank).total == 0
    finally:
        c.close()
    r = Hindsight(base_url=keyed.url, api_key=reader)
    try:
        for call in (
            lambda: r.memory.clear_bank_memories(bank),
            lambda: r.documents.reprocess_document(bank, "notes-1"),
            lambda: r.banks.trigger_consolidation(bank),
            lambda: r.document_transfer.export_documents(bank),
        ):
            with pytest.raises(ApiException) as e:
                run(call())
            assert e.value.status == 403 and "only read" in json.loads(e.value.body)["detail"]
    finally:
        r.close()


def _write(name: str, data: bytes) -> str:
    path = Path(tempfile.mkdtemp()) / name
    path.write_bytes(data)
    return str(path)
