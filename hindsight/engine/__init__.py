"""The engine: one method per operation (core.Engine), over one module per concept.

`Engine` is imported on first use, so that a concept module (text, temporal, filters...) can be
imported on its own without the whole engine: documents/chunking.py uses engine/text.py, and the
engine uses chunking."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import Engine

__all__ = ["Engine"]


def __getattr__(name: str) -> Any:
    if name == "Engine":
        from .core import Engine

        return Engine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
