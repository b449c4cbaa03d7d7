"""The server shell: the ASGI application (app.py) with one middleware per concern (metrics,
drain, Host/Origin, URL text, authentication before the body, body limits, error answers), the
routing of each request to its face, and uvicorn run with a draining stop, in one process or
several (serve.py, workers.py). Imports the faces (api, mcp, oauth) and web; nothing imports it
but the CLI."""
