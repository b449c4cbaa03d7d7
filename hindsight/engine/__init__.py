from .core import Engine

__all__ = ["Engine"]
