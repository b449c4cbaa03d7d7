"""The cores this process may use, in a module light enough for the worker supervisor
(server/workers.py), which must not import numpy or onnxruntime to share them out."""

from __future__ import annotations

import os


def cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
