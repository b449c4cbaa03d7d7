"""Memory ids sort in the order the memories were made, so that recall's ties go the same way
every time (engine/memory/ids.py)."""

from __future__ import annotations

import uuid

from hindsight.engine.memory.ids import new_memory_id


def test_memory_ids_sort_in_the_order_they_were_made():
    ids = [new_memory_id() for _ in range(5_000)]  # many within one millisecond
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_memory_ids_are_version_7_uuids_with_random_bits():
    a, b = new_memory_id(), new_memory_id()
    assert a.version == 7 and a.variant == uuid.RFC_4122
    assert a.int & ((1 << 62) - 1) != b.int & ((1 << 62) - 1)
