"""OAuth 2.1 for the MCP endpoints, so that assistants which take a URL and nothing else
(claude.ai, ChatGPT, Claude Desktop connectors) reach a person's own bank.

The protocol is the MCP SDK's (`mcp.server.auth`: its handlers, models and metadata); what is
ours is where things are kept and who may approve what:

- `store`: clients, pending consents, grants, codes and tokens in PostgreSQL, secrets hashed;
- `clients`: what a registering client may declare, and Client ID Metadata Documents;
- `provider`: the SDK's authorization-server provider over the store;
- `consent`: the consent page's two steps (describe a request, decide it with an API key);
- `resource`: the MCP endpoints as a protected resource (401 challenges, audience-checked tokens);
- `external`: an external identity provider's JWT access tokens instead of our own;
- `endpoints`: the SDK's routes and the protected-resource metadata, for the issuer a request names.
"""
