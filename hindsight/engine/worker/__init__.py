"""Running queued work: the table of operation kinds and their handlers (operation_kinds.py), the runner that
claims and runs them with leases and deadlines, and the scheduler's ticks. The top room: it
imports the rooms whose operations it runs."""
