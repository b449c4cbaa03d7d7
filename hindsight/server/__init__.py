"""The server shell: the ASGI application (app.py) with one middleware per concern (metrics,
drain, Host/Origin, URL text, authentication before the body, body limits, error answers), the
routing of each request to its face, and uvicorn run with a draining stop, in one process or
several (serve.py, workers.py). Imports the faces (api, mcp, oauth) and web; nothing imports it
but the CLI."""

import sys

# Modules a server process never runs, kept out of its memory (~1.5 MB). Python does not import a
# module whose sys.modules entry is None, and each importer then takes its own fallback: the MCP
# SDK sets up a plain StreamHandler instead of rich's (its import of rich, and pygments with it,
# installed here by test tools, is the only one a server makes); uvicorn imports its stat reloader
# instead of the watchfiles one (reloading is a development option we never pass). An entry
# already imported stays as it is.
for _name in ("rich", "pygments", "uvicorn.supervisors.watchfilesreload"):
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]
