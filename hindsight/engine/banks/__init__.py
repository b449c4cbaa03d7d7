"""Banks as a whole: creating, reading, updating, counting and deleting them; their sizes (which
way recall ranks them); their LLM usage; and the per-bank gates every operation queues at.
Imports rules and errors only."""
