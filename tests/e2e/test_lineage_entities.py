"""What the console shows beside recall: a memory's lineage (the raw text a fact was extracted
from, the facts a raw unit gave), the bank's entities, and banks listed with their counts."""

from __future__ import annotations


def test_lineage_of_extracted_facts(llm_api, bank):
    r = llm_api.post(
        f"/v1/banks/{bank}/memories?wait=true",
        json={"content": "Mira adopted a cat. She named it Pixel.", "timestamp": "2024-03-02T09:00:00Z"},
    )
    assert r.status_code == 200 and r.json()["extraction"] == "succeeded"
    facts = r.json()["memory_ids"]
    everything = llm_api.get(f"/v1/banks/{bank}/memories").json()["memories"]
    [raw] = [m for m in everything if m["superseded"]]
    of_raw = llm_api.get(f"/v1/banks/{bank}/memories/{raw['id']}/lineage").json()
    assert of_raw["sources"] == [] and sorted(f["id"] for f in of_raw["facts"]) == sorted(facts)
    of_fact = llm_api.get(f"/v1/banks/{bank}/memories/{facts[0]}/lineage").json()
    assert [s["id"] for s in of_fact["sources"]] == [raw["id"]] and of_fact["facts"] == []
    assert llm_api.get(f"/v1/banks/{bank}/memories/00000000-0000-0000-0000-000000000000/lineage").status_code == 404
    assert llm_api.get(f"/v1/banks/{bank}/memories/not-a-uuid/lineage").status_code == 422


def test_entities_page_and_bank_counts(api, bank):
    api.post(
        f"/v1/banks/{bank}/memories",
        json={
            "items": [
                {"content": "Lena met Arjun in Lisbon."},
                {"content": "Lena flew to Lisbon again."},
                {"content": "Arjun likes Porto."},
            ]
        },
    ).raise_for_status()
    page = api.get(f"/v1/banks/{bank}/entities?limit=2").json()
    assert page["total"] == 4 and len(page["entities"]) == 2
    assert [(e["name"], e["mention_count"]) for e in page["entities"]] == [("Arjun", 2), ("Lena", 2)]  # ties by name
    assert [e["name"] for e in api.get(f"/v1/banks/{bank}/entities?q=PORT").json()["entities"]] == ["Porto"]
    assert api.get(f"/v1/banks/{bank}/entities?limit=0").status_code == 422
    listed = {b["bank_id"]: b for b in api.get("/v1/banks").json()["banks"]}[bank]
    assert listed["memory_count"] == 3 and listed["entity_count"] == 4 and listed["last_memory_at"]
    assert api.get(f"/v1/banks/{bank}").json()["entity_count"] == 4
