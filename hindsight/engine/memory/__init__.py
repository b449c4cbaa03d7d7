"""Memories: retaining them (units, embeddings, entities, times), the sources they were retained
from, facts an LLM extracts, when each is true (validity), curation with history, reading and
deleting records, and re-embedding when the model changes. Imports banks, queue and rules."""
