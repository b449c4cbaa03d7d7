"""Recall: the query read into terms, one module per arm (semantic, keyword, entity, temporal),
their fusion, neighbours and the token budget; filters and relevance, shared with document
search. Imports memory (rows become memories), banks (sizes) and rules."""
