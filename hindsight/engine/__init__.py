"""The engine: one method per operation (core.Engine), over one module per concept, each run on
the Runtime (runtime.py); the worker and scheduler that run its operations (kinds.py) live here too.
Import what you need from its module: `from hindsight.engine.core import Engine`."""
