"""The `hindsight` command line (main.py)."""

import sys

# httpx imports its own command-line client (and with it rich and pygments, ~2.6 MB of the
# server's memory) whenever they are installed, as test tools install them; nothing here runs
# it. Python does not import a module set to None, and httpx then defines a stub instead.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
