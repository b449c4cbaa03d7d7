"""Forgetting: what a person asks to forget leaves every place it reached (engine/forgetting/erase.py),
and what a bank's retention policy says is too old goes on its own (retention.py)."""
