"""`hindsight migrate --from URL`: banks copied from a running Hindsight server, through its API, into
this one (the server at --url, as every other command).

Per bank, in this order, each step recorded in a state file as it completes:
1. its setup, in one template import (`POST /v1/default/banks/{bank}/import` here): its name,
   mission and disposition, the settings set for it (kept, and reported as not applied where
   this server has no such setting), and its mental models with their content (they start ready,
   no LLM needed);
2. its directives, by name, when this server has them (`/v1/default/banks/{bank}/directives`);
3. its documents in batches, each batch a transfer archive imported here as Hindsight's own
   document-transfer would (`POST .../document-transfer`, on_conflict=skip): a document's text,
   tags and time, its chunks, and its facts with their type, times, tags, metadata and entities.
   Read from its API: the document, its chunks, and its memories listed by document.

Why this way: everything read is the reference's public API (a read-only key will do), and
everything written goes through this server's own routes, so the same checks and limits apply as
to any client. An interruption loses nothing: the state file (by default beside where the
command runs, named after the source) says what is done, and the same command goes on from
there. Run twice, it changes nothing: the setup is applied as it is (unchanged models stay),
directives are matched by name, documents already here are skipped. What is not copied is
counted with why: Hindsight's observations (its consolidation's, which this server does not keep),
causal links between facts, facts no longer current (invalidated), memories of other types,
mental models whose id this server cannot hold, directives while this server has none.
"""

from __future__ import annotations

import io
import json
import os
import re
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import click
import httpx

MODEL_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
PAGE = 100
KEPT_TYPES = ("world", "experience")
# A batch's archive: at most this many documents, or about this much JSON.
BATCH_DOCUMENTS = 50
BATCH_BYTES = 8 * 2**20


class MigrateError(click.ClickException):
    pass


# What reading an answer of the source raises when it is not in the shape of the source's API
# (JSON of other types, fields missing): the source is trusted for nothing, so that is reported.
OUT_OF_SHAPE = (KeyError, IndexError, TypeError, AttributeError, ValueError)


def out_of_shape(exc: Exception) -> MigrateError:
    return MigrateError(
        f"the Hindsight server answered in a shape this command does not read ({type(exc).__name__}: {exc})"
    )


class Api:
    """One server's HTTP API, errors as sentences."""

    def __init__(self, url: str, key: str | None, what: str):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.what = what
        self.http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=300)

    def call(self, method: str, path: str, ok: tuple[int, ...] = (200,), **kw) -> httpx.Response:
        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise MigrateError(f"cannot reach {self.what} at {self.http.base_url}: {exc}") from None
        if r.status_code not in ok:
            try:
                body = r.json()
                detail = body.get("message") or body.get("detail") or body
            except ValueError:
                detail = r.text[:300]
            raise MigrateError(f"{self.what}: {method} {path}: {r.status_code}: {detail}")
        return r

    def get(self, path: str, **params) -> Any:
        r = self.call("GET", path, params=params)
        try:
            return r.json()
        except ValueError:
            raise MigrateError(
                f"{self.what}: GET {path}: answered in a shape this command does not read (not JSON)"
            ) from None

    def pages(self, path: str, key: str = "items", **params) -> Any:
        """Every item of an offset-paged listing. Some of the reference's lists answer without
        their page fields (whatever limit and offset say): a page that brings nothing not seen
        before ends the listing as well."""
        offset = 0
        seen: set[str] = set()
        while True:
            body = self.get(path, limit=PAGE, offset=offset, **params)
            items = body.get(key) or []
            new = [i for i in items if json.dumps(i, sort_keys=True) not in seen]
            seen.update(json.dumps(i, sort_keys=True) for i in new)
            yield from new
            offset += len(items)
            total = body.get("total")
            if not new or len(items) < PAGE or (isinstance(total, int) and offset >= total):
                return


@dataclass
class BankSummary:
    bank_id: str
    copied: Counter = field(default_factory=Counter)
    not_copied: dict[str, tuple[int, str]] = field(default_factory=dict)
    error: str | None = None

    def skip(self, what: str, n: int, why: str) -> None:
        if n:
            had = self.not_copied.get(what, (0, why))[0]
            self.not_copied[what] = (had + n, why)


class State:
    """What is done, per bank, kept in a JSON file written after every step (atomically)."""

    def __init__(self, path: Path):
        self.path = path
        self.data: dict[str, Any] = {"banks": {}}
        if path.exists():
            try:
                self.data = json.loads(path.read_text())
            except ValueError:
                raise MigrateError(f"{path}: not a migration state file (delete it to start over)") from None

    def bank(self, bank_id: str) -> dict[str, Any]:
        return self.data["banks"].setdefault(
            bank_id, {"setup": False, "directives": False, "documents": [], "done": False}
        )

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)


def default_state_path(source: str) -> Path:
    host = urlsplit(source).netloc or source
    return Path(f".hindsight-migrate-{re.sub(r'[^A-Za-z0-9.-]+', '_', host)}.json")


# ---- the steps -----------------------------------------------------------------------------------
def _bank_path(bank_id: str) -> str:
    return f"/v1/default/banks/{quote(bank_id, safe='')}"


def copy_setup(src: Api, dst: Api, bank_id: str, out: BankSummary) -> None:
    p = _bank_path(bank_id)
    profile = src.get(f"{p}/profile")
    try:
        overrides = src.get(f"{p}/config").get("overrides") or {}
    except MigrateError as exc:
        overrides = {}
        out.skip("settings", 1, f"the source did not give them ({exc.message})")
    disposition = profile.get("disposition") or {}
    settings = {**overrides, "reflect_mission": profile.get("mission") or None}
    settings.update({f"disposition_{t}": v for t, v in disposition.items() if isinstance(v, int)})
    models, bad = [], 0
    for m in src.pages(f"{p}/mental-models", detail="full"):
        if not MODEL_ID.fullmatch(str(m.get("id", ""))):
            bad += 1
            continue
        models.append(
            {
                "id": m["id"],
                "name": m.get("name") or m["id"],
                "source_query": m.get("source_query") or m.get("name") or m["id"],
                "tags": m.get("tags") or [],
                "max_tokens": min(max(int(m.get("max_tokens") or 2048), 64), 32_768),
                "content": m.get("content") or None,
            }
        )
    out.skip("mental models", bad, "their id is not 1-64 lowercase letters, digits and hyphens")
    kept = {k: v for k, v in settings.items() if v is not None}
    template = {"version": "1", "name": profile.get("name") or None, "bank": kept, "mental_models": models}
    done = dst.call("POST", f"{p}/import", json=template).json()
    out.copied["mental models created"] += len(done.get("mental_models_created", []))
    out.copied["mental models updated"] += len(done.get("mental_models_updated", []))
    out.copied["settings"] += len(kept)


def copy_directives(src: Api, dst: Api, bank_id: str, out: BankSummary, dst_has_directives: bool) -> None:
    p = _bank_path(bank_id)
    theirs = list(src.pages(f"{p}/directives", active_only=False))
    if not dst_has_directives:
        out.skip("directives", len(theirs), "this server does not keep directives yet")
        return
    ours = {d.get("name") for d in dst.pages(f"{p}/directives", active_only=False)}
    for d in theirs:
        if d.get("name") in ours:
            out.copied["directives already here"] += 1
            continue
        body = {k: d[k] for k in ("name", "content", "priority", "is_active", "tags") if k in d}
        dst.call("POST", f"{p}/directives", ok=(200, 201), json=body)
        out.copied["directives"] += 1


def read_document(src: Api, bank_id: str, doc_id: str, out: BankSummary) -> dict:
    """One document of the source, in the transfer archive's shape."""
    p = _bank_path(bank_id)
    d = quote(doc_id, safe="")
    doc = src.get(f"{p}/documents/{d}")
    chunks = sorted(src.pages(f"{p}/documents/{d}/chunks"), key=lambda c: c.get("chunk_index", 0))
    index = {c["chunk_id"]: c.get("chunk_index", i) for i, c in enumerate(chunks)}
    facts = []
    for m in src.pages(f"{p}/memories/list", document_id=doc_id):
        if m.get("document_id") not in (None, doc_id):
            continue
        kind = m.get("fact_type") or m.get("type")
        if kind not in KEPT_TYPES:
            out.skip("observations" if kind == "observation" else f"{kind} memories", 1, _WHY.get(kind, _WHY[None]))
            continue
        if m.get("state") == "invalidated":
            out.skip("invalidated facts", 1, "no longer current there: history, which a transfer does not carry")
            continue
        entities = m.get("entities") or ""
        facts.append(
            {
                "text": m["text"],
                "fact_type": kind,
                "context": m.get("context") or None,
                "event_date": m.get("date") or None,
                "occurred_start": m.get("occurred_start"),
                "occurred_end": m.get("occurred_end"),
                "mentioned_at": m.get("mentioned_at"),
                "metadata": m.get("metadata") or {},
                "tags": m.get("tags") or [],
                "chunk_index": index.get(m.get("chunk_id")),
                "entities": [e.strip() for e in entities.split(",") if e.strip()]
                if isinstance(entities, str)
                else list(entities),
            }
        )
    return {
        "id": doc_id,
        "original_text": doc.get("original_text"),
        "tags": doc.get("tags") or [],
        "created_at": doc.get("created_at"),
        "chunks": [
            {"chunk_index": c.get("chunk_index", i), "chunk_text": c["chunk_text"]} for i, c in enumerate(chunks)
        ],
        "facts": facts,
    }


_WHY = {
    "observation": "Hindsight's consolidation makes them; this server keeps none (mental models hold what is distilled)",
    None: "a memory type this server does not keep",
}


def archive(bank_id: str, docs: list[dict]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for i, d in enumerate(docs):
            zf.writestr(f"documents/{i:06d}.json", json.dumps(d, ensure_ascii=False))
        manifest = {
            "schema_version": 1,
            "source_bank_id": bank_id,
            "archive_type": "documents",
            "document_count": len(docs),
        }
        zf.writestr("manifest.json", json.dumps(manifest))
    return buf.getvalue()


def import_batch(dst: Api, bank_id: str, docs: list[dict], out: BankSummary) -> None:
    p = _bank_path(bank_id)
    r = dst.call(
        "POST",
        f"{p}/document-transfer",
        ok=(202,),
        params={"on_conflict": "skip"},
        files={"file": ("migrate.zip", archive(bank_id, docs), "application/zip")},
    )
    op_id = r.json()["operation_id"]
    delay = 0.1
    while True:
        op = dst.get(f"{p}/operations/{op_id}")
        if op["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(delay)
        delay = min(2.0, delay * 1.5)
    if op["status"] != "completed":
        raise MigrateError(f"importing {len(docs)} documents into {bank_id}: {op['status']}: {op.get('error_message')}")
    got = op.get("result_metadata") or {}
    out.copied["documents"] += got.get("documents_imported", 0)
    out.copied["documents already here"] += got.get("documents_skipped", 0)
    out.copied["facts"] += got.get("facts_imported", 0)
    out.copied["chunks"] += got.get("chunks_imported", 0)
    out.skip("causal links", got.get("causal_links_skipped", 0), "this server keeps no links between facts")


def copy_documents(src: Api, dst: Api, bank_id: str, mark, out: BankSummary, echo) -> None:
    """Every document not done yet, in batches; `mark(ids)` records a batch as done."""
    p = _bank_path(bank_id)
    done = set(mark(None))
    listed = list(src.pages(f"{p}/documents"))
    todo = [d["id"] for d in listed if d["id"] not in done]
    out.copied["documents done before"] += len(listed) - len(todo)
    batch: list[dict] = []
    size = 0
    for n, doc_id in enumerate(todo, 1):
        doc = read_document(src, bank_id, doc_id, out)
        batch.append(doc)
        size += len(json.dumps(doc))
        if len(batch) >= BATCH_DOCUMENTS or size >= BATCH_BYTES or n == len(todo):
            import_batch(dst, bank_id, batch, out)
            mark([d["id"] for d in batch])
            echo(f"  {bank_id}: documents {len(listed) - len(todo) + n}/{len(listed)}, facts {out.copied['facts']}")
            batch, size = [], 0


def migrate(
    source: str,
    source_key: str | None,
    target: str,
    target_key: str | None,
    banks: list[str] | None,
    state_path: Path,
    echo=click.echo,
) -> list[BankSummary]:
    src, dst = Api(source, source_key, "the Hindsight server"), Api(target, target_key, "this server")
    if banks is None:
        try:
            banks = [b["bank_id"] for b in src.pages("/v1/default/banks", key="banks")]
            if not all(isinstance(b, str) for b in banks):
                raise TypeError("a bank_id is not a string")
        except OUT_OF_SHAPE as exc:
            raise out_of_shape(exc) from None
    paths = dst.get("/openapi.json").get("paths", {})
    dst_has_directives = "/v1/default/banks/{bank_id}/directives" in paths
    state = State(state_path)
    summaries = []
    for bank_id in banks:
        out = BankSummary(bank_id)
        summaries.append(out)
        st = state.bank(bank_id)
        echo(f"{bank_id}: {'resuming' if any(st.values()) and not st['done'] else 'copying'}")
        try:
            if not st["setup"]:
                copy_setup(src, dst, bank_id, out)
                st["setup"] = True
                state.save()
            if not st["directives"]:
                copy_directives(src, dst, bank_id, out, dst_has_directives)
                st["directives"] = dst_has_directives  # without directives here, asked again next time
                state.save()

            def mark(ids: list[str] | None, st=st) -> list[str]:
                if ids:
                    st["documents"].extend(ids)
                    state.save()
                return st["documents"]

            copy_documents(src, dst, bank_id, mark, out, echo)
            stats = src.get(f"{_bank_path(bank_id)}/stats")
            out.skip(
                "observations (bank total)",
                int(stats.get("total_observations") or 0),
                _WHY["observation"],
            )
            st["done"] = True
            state.save()
        except (MigrateError, *OUT_OF_SHAPE) as exc:
            out.error = (exc if isinstance(exc, MigrateError) else out_of_shape(exc)).message
            echo(f"  {bank_id}: stopped: {out.error}")
    return summaries


def report(summaries: list[BankSummary]) -> str:
    lines = []
    for s in summaries:
        copied = ", ".join(f"{n} {what}" for what, n in s.copied.items() if n) or "nothing new"
        lines.append(f"{s.bank_id}: {'FAILED: ' + s.error if s.error else 'copied'}: {copied}")
        for what, (n, why) in s.not_copied.items():
            lines.append(f"  not copied: {n} {what}: {why}")
    return "\n".join(lines)


def register(cli: click.Group) -> None:
    @cli.command("migrate")
    @click.option("--from", "source", required=True, help="The Hindsight server's URL (its API, /v1/default).")
    @click.option("--api-key", default=None, help="A key of the Hindsight server (read access is enough).")
    @click.option("--bank", "banks", multiple=True, help="A bank to copy (repeatable).")
    @click.option("--all", "every", is_flag=True, help="Every bank the source key may read.")
    @click.option(
        "--url",
        envvar="HINDSIGHT_URL",
        default="http://127.0.0.1:8888",
        show_default=True,
        help="This server [HINDSIGHT_URL].",
    )
    @click.option("--key", envvar="HINDSIGHT_KEY", default=None, help="A key of this server [HINDSIGHT_KEY].")
    @click.option(
        "--state",
        "state_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="The resume file [default: .hindsight-migrate-HOST.json].",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
    def migrate_command(source, api_key, banks, every, url, key, state_path, as_json):  # fmt: skip
        """Copy banks from a running Hindsight server: profile and settings, memories with their
        facts, times, tags and metadata, documents and chunks, mental models, directives.
        Resumable (run it again after an interruption) and idempotent (run twice, it copies nothing
        new); ends with what was copied and what was not, with why."""
        if bool(banks) == every:
            raise click.UsageError("give --bank B (repeatable) or --all")
        path = state_path or default_state_path(source)
        progress = (lambda line: click.echo(line, err=True)) if as_json else click.echo
        try:
            summaries = migrate(source, api_key, url, key, list(banks) or None, path, echo=progress)
        except KeyboardInterrupt:
            click.echo(f"interrupted: run the same command again to go on from where it stopped ({path})", err=True)
            raise SystemExit(130) from None
        if as_json:
            click.echo(
                json.dumps(
                    [
                        {
                            "bank_id": s.bank_id,
                            "error": s.error,
                            "copied": dict(s.copied),
                            "not_copied": {k: {"count": n, "why": why} for k, (n, why) in s.not_copied.items()},
                        }
                        for s in summaries
                    ],
                    indent=2,
                )
            )
        else:
            click.echo(report(summaries))
        if any(s.error for s in summaries):
            raise SystemExit(1)
