"""Recall: the query read into terms, one module per arm (semantic, keyword, temporal), the scores
of their hits and the memories beside them, their fusion and the token budget, and the trace of a
ranking; filters and relevance, shared with document search. Imports memory (rows become
memories), banks (sizes) and rules."""
