"""The durable operation queue: one table of asynchronous work per bank (enqueue, claim, finish,
cancel, list). What runs an operation is the worker room's; this room only keeps the rows.
Imports rules and errors only."""
