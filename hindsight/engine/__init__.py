"""The engine: every operation of a memory bank, one method each on `facade.Engine`, which checks
the caller and hands the work to the room that holds it. `lifecycle` starts and stops the
process's parts; `runtime.Runtime` is what every room's functions run on. The rooms, each
importing only those below it (docs/architecture.md; the import contract in pyproject.toml):
worker > knowledge | reflection | transfer > search > memory > access | banks | queue > rules.
Faces (api, mcp, oauth, cli) import the facade and the rooms' request and result shapes."""
