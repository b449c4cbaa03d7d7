"""The knowledge base: documents imported from files and URLs, chunked and embedded, and searched
in the shapes RAG-over-MCP clients use (rag_search, document search, access checks). Imports
search (its keyword ranking), banks, queue and rules."""
