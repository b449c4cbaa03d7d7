"""Prometheus metrics for operators (`GET /metrics`, prometheus-client's text format).

What is counted where it happens (HTTP and MCP in the routing layer, recall arms in recall,
units in retain, embedding in the embedder, LLM calls in the LLM client); what is a state of the
database (operations waiting or running, by type and status) and of the pool is read when
Prometheus scrapes, so it is never stale and costs nothing between scrapes. One registry per
process: with several server processes, scrape each (their counters add up in PromQL).

Labels are bounded: routes are route templates (`/v1/banks/{bank_id}/recall`, never a bank id),
tools are tool names, models are the configured model strings.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

REGISTRY = CollectorRegistry(auto_describe=True)
# Recall and retain take milliseconds to seconds; LLM calls seconds to minutes.
FAST = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
SLOW = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

HTTP_REQUESTS = Counter(
    "hindsight_http_requests",
    "HTTP requests answered, by route template and status.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
HTTP_SECONDS = Histogram(
    "hindsight_http_request_seconds",
    "Time to answer an HTTP request.",
    ["method", "route"],
    buckets=FAST,
    registry=REGISTRY,
)
MCP_CALLS = Counter(
    "hindsight_mcp_tool_calls",
    "MCP tool calls, by tool and outcome (ok, error).",
    ["tool", "outcome"],
    registry=REGISTRY,
)
MCP_SECONDS = Histogram(
    "hindsight_mcp_tool_seconds", "Time an MCP tool call took.", ["tool"], buckets=FAST, registry=REGISTRY
)
RECALL_ARM_SECONDS = Histogram(
    "hindsight_recall_arm_seconds", "Time of each recall arm's query.", ["arm"], buckets=FAST, registry=REGISTRY
)
RETAIN_ITEMS = Counter("hindsight_retain_items", "Items retained.", registry=REGISTRY)
RETAIN_UNITS = Counter(
    "hindsight_retain_units", "Memory units stored (raw units and extracted facts).", ["kind"], registry=REGISTRY
)
EMBED_SECONDS = Histogram(
    "hindsight_embedding_seconds",
    "Time of one embedding call (a query or a batch).",
    ["call"],
    buckets=FAST,
    registry=REGISTRY,
)
EMBED_TEXTS = Counter("hindsight_embedded_texts", "Texts embedded.", ["call"], registry=REGISTRY)
LLM_CALLS = Counter(
    "hindsight_llm_calls",
    "LLM calls, by operation, model and outcome: ok, or why the call failed (rate_limit, timeout, "
    "provider_error, malformed, truncated, empty, too_long).",
    ["operation", "model", "outcome"],
    registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "hindsight_llm_tokens",
    "LLM tokens, by operation, model and kind (prompt, completion).",
    ["operation", "model", "kind"],
    registry=REGISTRY,
)
LLM_COST = Counter(
    "hindsight_llm_cost_usd",
    "LLM cost in USD, where litellm knows the model's price.",
    ["operation", "model"],
    registry=REGISTRY,
)
LLM_SECONDS = Histogram(
    "hindsight_llm_call_seconds", "Time of one LLM call.", ["operation"], buckets=SLOW, registry=REGISTRY
)
OPERATIONS = Gauge(
    "hindsight_operations",
    "Operations waiting (queued) or running, by type, read at scrape.",
    ["type", "status"],
    registry=REGISTRY,
)
POOL = Gauge(
    "hindsight_db_pool_connections", "Database pool connections: open, idle, max.", ["state"], registry=REGISTRY
)
AUDIT_RECORDS = Counter(
    "hindsight_audit_records",
    "Audit log records, by what became of them: written (copied to the database) or dropped (the buffer was "
    "full while the database could not be written; docs/privacy.md).",
    ["outcome"],
    registry=REGISTRY,
)

READS = Counter(
    "hindsight_db_reads",
    "Reads of a bank (recall, reflect's reading, listings, exports), by the server they ran on: primary, "
    "or replica-N (HINDSIGHT_API_READ_DATABASE_URL, in order).",
    ["target"],
    registry=REGISTRY,
)
READ_FALLBACKS = Counter(
    "hindsight_db_read_fallbacks",
    "Reads that could have used a replica but went to the primary, by why: behind (no replica had "
    "replayed the bank's last write), lagging, down, promoted (no longer a standby), failed (a replica failed "
    "during the read).",
    ["reason"],
    registry=REGISTRY,
)
REPLICA_LAG = Gauge(
    "hindsight_db_replica_lag_seconds",
    "How far each read replica's replay is behind the primary, seconds (NaN while unknown or down).",
    ["replica"],
    registry=REGISTRY,
)


def exposition() -> tuple[bytes, str]:
    """The exposition text and its content type; the engine sets the state gauges first
    (Engine.observe)."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
