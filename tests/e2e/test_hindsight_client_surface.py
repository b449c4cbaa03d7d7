"""Hindsight's official Python client (hindsight-client 1.1.0, unchanged) on the routes of issue
52a: directives, webhooks and their deliveries, entities and the graphs, tags, the memories time
series, the knowledge base and the LLM request log. Each answer goes through the client's
generated, strictly validated models, so a field missing or mistyped in our shapes fails here as
it would for a user."""

from __future__ import annotations

import uuid

import pytest
from hindsight_client import Hindsight
from hindsight_client.hindsight_client import _run_async as run
from hindsight_client_api.api.banks_api import BanksApi
from hindsight_client_api.api.directives_api import DirectivesApi
from hindsight_client_api.api.entities_api import EntitiesApi
from hindsight_client_api.api.knowledge_base_api import KnowledgeBaseApi
from hindsight_client_api.api.llm_traces_api import LLMTracesApi
from hindsight_client_api.api.memory_api import MemoryApi
from hindsight_client_api.api.webhooks_api import WebhooksApi
from hindsight_client_api.models import (
    CreateDirectiveRequest,
    CreateFolderRequest,
    CreatePageRequest,
    CreateWebhookRequest,
    UpdateDirectiveRequest,
    UpdateNodeRequest,
    UpdateWebhookRequest,
)

from conftest import Server, fresh_database, wait_for
from support import Receiver


@pytest.fixture(scope="module")
def surface_server(pg_url):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "client_surface"),
            "HINDSIGHT_API_SECRETS_KEY": "client-secrets-key-0123456789-abcdefgh",
            "HINDSIGHT_API_ALLOW_PRIVATE_URLS": "true",
            "HINDSIGHT_API_SCHEDULER_INTERVAL": "0.3",
        }
    ).start()
    yield s
    s.stop()


@pytest.fixture
def client(surface_server):
    c = Hindsight(base_url=surface_server.url)
    yield c
    c.close()


def test_directives_and_the_knowledge_base(client):
    bank = f"client-{uuid.uuid4().hex[:8]}"
    client.retain(bank, "Mira prefers Rust for the ingest service.")
    directives = DirectivesApi(client._api_client)
    made = run(directives.create_directive(bank, CreateDirectiveRequest(name="Tone", content="Be brief.", priority=2)))
    assert made.id and made.bank_id == bank and made.is_active
    listed = run(directives.list_directives(bank))
    assert listed.total == 1 and listed.items[0].name == "Tone"
    changed = run(directives.update_directive(bank, made.id, UpdateDirectiveRequest(is_active=False)))
    assert changed.is_active is False and run(directives.get_directive(bank, made.id)).content == "Be brief."
    run(directives.delete_directive(bank, made.id))
    assert run(directives.list_directives(bank, active_only=False)).total == 0

    kb = KnowledgeBaseApi(client._api_client)
    folder = run(kb.create_knowledge_folder(bank, CreateFolderRequest(name="Team")))
    page = run(
        kb.create_knowledge_page(
            bank, CreatePageRequest(name="Languages", source_query="Which languages?", parent_id=folder.id)
        )
    )
    assert page.page_id and page.mental_model_id and page.operation_id
    wait_for(lambda: run(kb.get_knowledge_page(bank, page.page_id)).body)
    got = run(kb.get_knowledge_page(bank, page.page_id))
    assert "Rust" in got.body and got.markdown.startswith("---")
    tree = run(kb.get_knowledge_base_tree(bank))
    assert tree.roots[0].children[0].id == page.page_id
    assert run(kb.search_knowledge_base(bank, q="Rust")).results[0].id == page.page_id
    assert any(f.path == "index.md" for f in run(kb.export_knowledge_base(bank)).files)
    moved = run(kb.update_knowledge_node(bank, page.page_id, UpdateNodeRequest(name="Langs")))
    assert moved.name == "Langs"
    run(kb.delete_knowledge_node(bank, folder.id))
    assert run(kb.get_knowledge_base_tree(bank)).roots == []


def test_entities_graphs_tags_time_series_and_llm_requests(client):
    bank = f"client-{uuid.uuid4().hex[:8]}"
    client.retain_batch(
        bank,
        [
            {"content": "Alice Moreau founded Lumen Labs with Bruno Silva in Porto.", "tags": ["team"]},
            {"content": "Alice Moreau hired Chen Wei as the first engineer.", "tags": ["team"]},
        ],
    )
    entities = EntitiesApi(client._api_client)
    listed = run(entities.list_entities(bank))
    alice = next(e for e in listed.items if e.canonical_name == "Alice Moreau")
    assert alice.mention_count == 2 and alice.first_seen
    detail = run(entities.get_entity(bank, alice.id))
    assert len(detail.observations) == 2
    assert run(entities.regenerate_entity_observations(bank, alice.id)).id == alice.id
    graph = run(entities.get_entity_graph(bank))
    assert graph.total_edges >= 3 and {n.data.label for n in graph.nodes} >= {"Alice Moreau", "Chen Wei"}

    memory = MemoryApi(client._api_client)
    g = run(memory.get_graph(bank))
    assert g.total_units == 2 and len(g.table_rows) == 2 and g.edges
    tags = run(memory.list_tags(bank))
    assert tags.items[0].tag == "team" and tags.items[0].count == 2
    series = run(BanksApi(client._api_client).get_memories_timeseries(bank, period="1d"))
    assert series.trunc == "hour" and sum(b.world + b.experience for b in series.buckets) == 2

    traces = LLMTracesApi(client._api_client)
    assert run(traces.list_llm_requests(bank)).total == 0  # offline: no LLM call
    assert len(run(traces.llm_request_stats(bank)).buckets) == 7


def test_webhooks_and_their_deliveries(client):
    bank = f"client-{uuid.uuid4().hex[:8]}"
    receiver = Receiver()
    try:
        hooks = WebhooksApi(client._api_client)
        made = run(hooks.create_webhook(bank, CreateWebhookRequest(url=receiver.url, event_types=["retain.completed"])))
        assert made.secret and made.enabled and made.http_config.timeout_seconds == 30
        client.retain(bank, "Omar fixes bikes.")
        wait_for(lambda: receiver.events("retain.completed"))
        assert receiver.verify(made.secret) == 1

        def delivered():
            found = run(hooks.list_webhook_deliveries(bank, made.id)).items
            return found if found and found[0].status == "completed" else None

        (d,) = wait_for(delivered)
        assert d.event_type == "retain.completed" and d.attempts == 1 and d.last_response_status == 200
        assert [w.id for w in run(hooks.list_webhooks(bank)).items] == [made.id]
        off = run(hooks.update_webhook(bank, made.id, UpdateWebhookRequest(enabled=False)))
        assert off.enabled is False and off.secret is None
        assert run(hooks.delete_webhook(bank, made.id)).success
    finally:
        receiver.stop()
