"""The entity heuristic (language/entities.py): runs of capitalised words, minus sentence-initial
common words, pronouns, weekdays and months, with a kind from suffixes and prepositions."""

from __future__ import annotations

from hindsight.language.entities import canonical, extract_entities, kind_of_type, merge_entities


def test_people_places_and_organisations():
    found = extract_entities("Caroline met Melanie at the Santa Maria Hospital in Lisbon.")
    assert found == [
        ("Caroline", "person"),
        ("Melanie", "person"),
        ("Santa Maria Hospital", "organization"),
        ("Lisbon", "place"),
    ]
    assert ("New York City", "place") in extract_entities("My friend Anna moved to New York City.")


def test_common_words_weekdays_and_months_are_not_entities():
    assert extract_entities("The meeting on Monday in May was fun.") == []
    names = [n for n, _ in extract_entities("Yesterday I went hiking with John Smith.")]
    assert names == ["John Smith"]


def test_each_entity_once_by_canonical_form():
    found = extract_entities("Melanie painted. Later MELANIE and melanie's friend Melanie sang.")
    assert [canonical(n) for n, _ in found].count("melanie") == 1


def test_client_types_map_to_kinds_and_merge_without_duplicates():
    assert kind_of_type("PERSON") == "person" and kind_of_type(None) == "name"
    merged = merge_entities([("Alice", "person")], [("alice", "name"), ("Acme", "organization")])
    assert [canonical(n) for n, _ in merged] == ["alice", "acme"]


def test_names_in_any_cased_alphabet():
    """Letters outside ASCII belong to the name ("Zoë" was "Zo"; "Émile" and "São Paulo" were lost)."""
    assert extract_entities("Melanie paints with Zoë.") == [("Melanie", "person"), ("Zoë", "person")]
    found = extract_entities("Émile flew from São Paulo and lives in Zürich with Олег.")
    assert found == [("Émile", "person"), ("São Paulo", "place"), ("Zürich", "place"), ("Олег", "person")]


def test_cjk_text_ends_a_name_but_not_a_sentence():
    assert extract_entities("Alice在北京见了Bob") == [("Alice", "person"), ("Bob", "person"), ("北京", "place")]
