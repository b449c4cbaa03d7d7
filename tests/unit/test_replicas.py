"""The pure parts of read replicas (db/replicas.py) and of the settings that place a process in a
cluster: how far behind a replica is from the primary's samples, which failures are the
replica's, why a replica is passed over, and which settings need an external database."""

from __future__ import annotations

from collections import deque

import asyncpg
import pytest

from hindsight.config import ConfigError, load_settings
from hindsight.db.replicas import Replica, lag_from_samples, replica_trouble

SAMPLES = deque([(100.0, 1000), (100.25, 1000), (100.5, 1500), (100.75, 2000), (101.0, 2000)])


@pytest.mark.parametrize(
    "replayed, lag",
    [
        (2000, 0.0),  # all the primary had at the last sample
        (2500, 0.0),  # past it (the primary moved on since, the replica saw it first)
        (1500, 101.5 - 100.75),  # behind since the primary passed 1500, at 100.75
        (1200, 101.5 - 100.5),
        (900, 101.5 - 100.0),  # behind every sample: at least as old as the oldest
    ],
)
def test_lag_is_how_long_ago_the_primary_passed_the_replay_position(replayed, lag):
    assert lag_from_samples(SAMPLES, replayed, 101.5) == pytest.approx(lag)


def test_no_samples_no_lag():
    assert lag_from_samples(deque(), 10, 5.0) is None


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionRefusedError(111, "Connection refused"),
        asyncpg.InterfaceError("connection is closed"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.CannotConnectNowError("the database system is starting up"),
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        asyncpg.TooManyConnectionsError("sorry, too many clients already"),
        asyncpg.SerializationError("canceling statement due to conflict with recovery"),
    ],
)
def test_the_replicas_troubles_send_the_read_to_the_primary(exc):
    assert replica_trouble(exc)


@pytest.mark.parametrize(
    "exc",
    [
        asyncpg.SerializationError("could not serialize access due to concurrent update"),
        asyncpg.UndefinedTableError("relation does not exist"),
        ValueError("a bug"),
    ],
)
def test_a_reads_own_error_is_not_the_replicas(exc):
    assert not replica_trouble(exc)


def _replica(**state) -> Replica:
    return Replica("replica-1", "postgresql://r/db", pools=None, **state)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "state, why",
    [
        ({"standby": True, "replayed": 10, "lag": 0.5}, None),
        ({"standby": True, "replayed": 10, "lag": 11.0}, "lagging"),
        ({"standby": True, "replayed": 10, "lag": None}, "lagging"),
        ({"standby": False, "replayed": None, "lag": None}, "promoted"),
        ({"standby": True, "replayed": 10, "lag": 0.0, "reachable": False}, "down"),
        ({"standby": True, "replayed": 10, "lag": 0.0, "down_until": 60.0}, "down"),
    ],
)
def test_why_a_replica_is_passed_over(state, why):
    assert _replica(**state).usable(now=50.0, max_lag=10.0) == why


def test_replica_urls_are_separated_by_spaces():
    s = load_settings(
        {
            "HINDSIGHT_API_DATABASE_URL": "postgresql://h1,h2/db?target_session_attrs=read-write",
            "HINDSIGHT_API_READ_DATABASE_URL": " postgresql://r1/db\npostgresql://r2,r3/db ",
        }
    )
    assert s.read_database_urls == ["postgresql://r1/db", "postgresql://r2,r3/db"]
    assert load_settings({}).read_database_urls == []


@pytest.mark.parametrize(
    "name",
    ["HINDSIGHT_API_READ_DATABASE_URL", "HINDSIGHT_API_MIGRATION_DATABASE_URL", "HINDSIGHT_API_DB_POOL_MODE"],
)
def test_cluster_settings_need_an_external_database(name):
    value = "transaction" if name.endswith("POOL_MODE") else "postgresql://r/db"
    with pytest.raises(ConfigError, match=name):
        load_settings({name: value})


def test_roles():
    assert load_settings({}).role == "all"
    assert load_settings({"HINDSIGHT_API_ROLE": "Worker"}).role == "worker"
    with pytest.raises(ConfigError, match="HINDSIGHT_API_ROLE"):
        load_settings({"HINDSIGHT_API_ROLE": "scheduler"})
