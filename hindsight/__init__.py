"""Hindsight: Postgres-native memory banks for AI agents."""

__version__ = "0.1.0"
