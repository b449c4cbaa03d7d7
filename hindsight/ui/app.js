// Hindsight console: a hand-written single-page app over the server's own REST API (/v1/...).
// No framework and no build step: the server serves these files as they are, and they work
// offline. Everything shown comes from the API with the key the person typed once (kept in this
// browser tab's sessionStorage); text is always inserted as text, never as HTML.

const KEY = "hindsight.key";
const PAGE = 50;
const view = () => document.getElementById("view");

// ---- small DOM helper -------------------------------------------------------------------------
function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}
// Like replaceChildren, but lists (and lists of lists) are spread, and null/false left out.
function fill(el, ...kids) {
  el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  return el;
}
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");
const short = (s, n = 160) => (s && s.length > n ? s.slice(0, n) + "…" : s || "");
const enc = encodeURIComponent;
const csv = (s) => (s || "").split(",").map((t) => t.trim()).filter(Boolean);

function toast(message, error = false) {
  const el = h("div", { class: error ? "error" : "" }, message);
  document.getElementById("toast").append(el);
  setTimeout(() => el.remove(), error ? 7000 : 3500);
}

// ---- API ---------------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(method, path, body, { raw = false, contentType } = {}) {
  const headers = {};
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = `Bearer ${key}`;
  let payload = body;
  if (body !== undefined && !(body instanceof Blob)) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  } else if (body instanceof Blob) {
    headers["Content-Type"] = contentType || "application/octet-stream";
  }
  const r = await fetch(path, { method, headers, body: payload });
  if (!r.ok) {
    let message = r.statusText;
    try { message = (await r.json()).message || message; } catch (_) { /* not JSON */ }
    if (r.status === 401) { sessionStorage.removeItem(KEY); showLogin(message); }
    throw new ApiError(r.status, message);
  }
  return raw ? r : r.json();
}

// Run an action from a button or form; errors become a toast instead of an unhandled rejection.
async function attempt(fn, done) {
  try {
    const out = await fn();
    if (done) toast(done);
    return out;
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) toast(e.message || String(e), true);
    return undefined;
  }
}

// ---- login and routing ----------------------------------------------------------------------
let health = null;

function showLogin(message) {
  const input = h("input", { type: "password", id: "key", placeholder: "hsk_… or the admin key", autocomplete: "off" });
  const form = h("form", { class: "panel login", onsubmit: async (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, input.value.trim());
    try {
      await api("GET", "/v1/banks");
      location.hash = "#/";
      route();
    } catch (_) { /* showLogin was called again with the reason */ }
  } },
  h("h1", {}, "Sign in"),
  h("p", { class: "muted" }, "This server needs an API key. It is kept in this browser tab only."),
  message ? h("p", { class: "error" }, message) : null,
  input, h("p", {}, h("button", { class: "primary", type: "submit" }, "Sign in")));
  fill(view(), form);
  fill(document.getElementById("who"), );
  input.focus();
}

function header() {
  const nav = document.getElementById("nav");
  const here = location.hash || "#/";
  fill(nav, 
    h("a", { href: "#/", class: here === "#/" || here.startsWith("#/bank/") ? "active" : "" }, "Banks"),
    h("a", { href: "#/keys", class: here.startsWith("#/keys") ? "active" : "" }, "API keys"),
    health && health.oauth === "built-in"
      ? h("a", { href: "#/applications", class: here.startsWith("#/applications") ? "active" : "" }, "Applications") : null,
    h("a", { href: "/docs", target: "_blank" }, "API docs"),
  );
  const who = document.getElementById("who");
  const signedIn = sessionStorage.getItem(KEY);
  fill(who, 
    health ? `${health.mode} · ${health.database} database · v${health.version}` : "",
    signedIn ? h("button", { onclick: () => { sessionStorage.removeItem(KEY); showLogin(); } }, "Sign out") : null,
  );
}

async function route() {
  if (!health) health = await fetch("/health").then((r) => r.json()).catch(() => null);
  if (health && health.auth && !sessionStorage.getItem(KEY)) return showLogin();
  header();
  const parts = (location.hash.replace(/^#\/?/, "") || "").split("/").map(decodeURIComponent);
  try {
    if (parts[0] === "bank" && parts[1]) await bankPage(parts[1], parts[2] || "search");
    else if (parts[0] === "keys") await keysPage();
    else if (parts[0] === "applications") await applicationsPage();
    else await banksPage();
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) {
      fill(view(), h("div", { class: "panel error" }, e.message || String(e)));
    }
  }
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);

// ---- banks ------------------------------------------------------------------------------------
async function banksPage() {
  const { banks } = await api("GET", "/v1/banks");
  const id = h("input", { name: "bank_id", placeholder: "bank id", required: true });
  const name = h("input", { name: "name", placeholder: "name (optional)" });
  const mission = h("input", { name: "mission", placeholder: "mission (optional)", class: "grow" });
  const importId = h("input", { name: "import_bank", placeholder: "bank id", required: true });
  const importFile = h("input", { type: "file", name: "import_file", accept: ".gz,application/gzip", required: true });
  fill(view(), 
    h("h1", {}, "Banks"),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Bank"), h("th", {}, "Name"), h("th", {}, "Memories"),
      h("th", {}, "Entities"), h("th", {}, "Last memory"), h("th", {}, "Created"))),
    h("tbody", {}, banks.length ? banks.map((b) => h("tr", { class: "clickable", "data-bank": b.bank_id,
      onclick: () => { location.hash = `#/bank/${enc(b.bank_id)}`; } },
    h("td", {}, h("a", { href: `#/bank/${enc(b.bank_id)}` }, b.bank_id)), h("td", {}, b.name || ""),
    h("td", {}, b.memory_count ?? 0), h("td", {}, b.entity_count ?? 0), h("td", {}, when(b.last_memory_at)),
    h("td", {}, when(b.created_at)))) : h("tr", {}, h("td", { colspan: 6, class: "muted" },
      "No banks yet. Retaining a memory creates its bank.")))),
    h("h2", {}, "Create a bank"),
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      await api("POST", "/v1/banks", { bank_id: id.value.trim(), name: name.value || null, mission: mission.value || null });
      location.hash = `#/bank/${enc(id.value.trim())}`;
    }, "Bank created"); } }, id, name, mission, h("button", { class: "primary", type: "submit" }, "Create")),
    h("h2", {}, "Import a bank file"),
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      const r = await api("POST", `/v1/banks/${enc(importId.value.trim())}/import`, importFile.files[0],
        { contentType: "application/gzip" });
      toast(`Imported ${Object.values(r.imported).reduce((a, b) => a + b, 0)} objects into ${r.bank_id}`);
      location.hash = `#/bank/${enc(r.bank_id)}`;
    }); } }, importId, importFile, h("button", { type: "submit" }, "Import")),
  );
}

const TABS = [["search", "Search"], ["playground", "Recall playground"], ["memories", "Memories"], ["entities", "Entities"],
  ["graph", "Graph"], ["models", "Mental models"], ["directives", "Directives"], ["knowledge", "Knowledge base"],
  ["documents", "Documents"], ["webhooks", "Webhooks"], ["operations", "Operations"], ["usage", "LLM usage"],
  ["connections", "Connected apps"], ["audit", "Audit log"], ["settings", "Export & settings"]];

async function bankPage(bankId, tab) {
  const base = `/v1/banks/${enc(bankId)}`;
  let bank;
  try {
    bank = await api("GET", base);
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404)) throw e;
    bank = { bank_id: bankId, name: null, mission: null, memory_count: 0, entity_count: 0, document_count: 0 };
  }
  const body = h("div", { id: "tab" });
  fill(view(), 
    h("h1", {}, bank.name ? `${bank.name} ` : "", h("span", { class: "muted" }, bank.bank_id)),
    bank.mission ? h("p", { class: "muted" }, bank.mission) : null,
    h("div", { class: "stats panel" },
      h("div", { class: "stat" }, h("b", {}, bank.memory_count ?? 0), "memories"),
      h("div", { class: "stat" }, h("b", {}, bank.entity_count ?? 0), "entities"),
      h("div", { class: "stat" }, h("b", {}, bank.document_count ?? 0), "retained documents"),
      h("div", { class: "stat" }, h("b", {}, when(bank.last_memory_at)), "last memory")),
    h("nav", { class: "tabs" }, TABS.filter(([k]) => k !== "connections" || (health && health.oauth === "built-in"))
      .map(([k, label]) => h("a", { href: `#/bank/${enc(bankId)}/${k}`,
      class: k === tab ? "active" : "", "data-tab": k }, label))),
    body,
  );
  const pages = { search: searchTab, playground: playgroundTab, memories: memoriesTab, entities: entitiesTab,
    graph: graphTab, models: modelsTab, directives: directivesTab, knowledge: knowledgeTab, documents: documentsTab,
    webhooks: webhooksTab, operations: operationsTab, usage: usageTab, connections: connectionsTab, audit: auditTab,
    settings: settingsTab };
  await (pages[tab] || searchTab)(body, base, bankId);
}

// ---- memories: search, browse, read, delete ------------------------------------------------------
function memoryCard(m, base, onChange) {
  const times = [m.occurred_start ? `occurred ${when(m.occurred_start)}` : null,
    m.mentioned_at ? `mentioned ${when(m.mentioned_at)}` : null].filter(Boolean).join(" · ");
  return h("div", { class: "result", "data-memory": m.id },
    h("div", {}, h("span", { class: `badge ${m.type}` }, m.type), m.superseded ? h("span", { class: "badge" }, "superseded by facts") : null,
      m.invalidated_at ? h("span", { class: "badge invalid", "data-state": "invalidated" }, "invalidated") : null,
      m.valid_to ? h("span", { class: "badge", "data-state": "ended" }, `true until ${when(m.valid_to)}`) : null,
      (m.tags || []).map((t) => h("span", { class: "badge" }, `#${t}`))),
    h("div", { class: "text" }, m.text),
    h("div", { class: "meta" }, [times, m.entities && m.entities.length ? `entities: ${m.entities.join(", ")}` : null,
      m.score != null ? `score ${m.score} · relevance ${m.relevance} · ${(m.arms || []).join(", ")}` : null,
      m.document_id ? `document ${m.document_id}` : null].filter(Boolean).join(" · ")),
    h("div", { class: "row" }, h("button", { onclick: () => memoryDetail(m.id, base, onChange) }, "Details")));
}

// What an erasure will take (a dry run), and what it took, in one sentence each.
function forgetting(r) {
  const facts = r.memories - 1;
  return `It${facts > 0 ? ` and ${facts} fact${facts === 1 ? "" : "s"} drawn from it` : ""} will leave the bank, `
    + "with its history and its traces (docs/privacy.md).";
}
function forgotten(r) {
  const parts = [`${r.memories} memor${r.memories === 1 ? "y" : "ies"} forgotten`];
  if (r.entities_removed) parts.push(`${r.entities_removed} entit${r.entities_removed === 1 ? "y" : "ies"} removed`);
  if (r.mental_models_stale && r.mental_models_stale.length) parts.push(`${r.mental_models_stale.length} mental model(s) to refresh`);
  return parts.join(" · ");
}

async function memoryDetail(id, base, onChange) {
  const [m, lineage, history] = await Promise.all([api("GET", `${base}/memories/${id}`),
    api("GET", `${base}/memories/${id}/lineage`), api("GET", `${base}/memories/${id}/history`)]);
  const refresh = async () => { await memoryDetail(id, base, onChange); if (onChange) await onChange(); };
  const change = (body, done) => attempt(async () => {
    await api("PATCH", `${base}/memories/${id}`, body);
    await refresh();
  }, done);
  // Editing: only what changed is sent; the reason is recorded in the history.
  const text = h("textarea", { name: "text", rows: 3, class: "grow" }, m.text);
  const context = h("input", { name: "context", value: m.context });
  const tags = h("input", { name: "tags", value: (m.tags || []).join(", "), placeholder: "tags, comma-separated" });
  // datetime-local inputs hold this browser's local time; the API speaks UTC.
  const local = (iso) => (iso ? new Date(new Date(iso).getTime() - new Date(iso).getTimezoneOffset() * 60000).toISOString().slice(0, 16) : "");
  const validFrom = h("input", { name: "valid_from", type: "datetime-local", value: local(m.valid_from) });
  const validTo = h("input", { name: "valid_to", type: "datetime-local", value: local(m.valid_to) });
  const reason = h("input", { name: "reason", placeholder: "reason (recorded in the history)", class: "grow" });
  const utc = (local) => (local ? new Date(local).toISOString() : null);
  const save = () => {
    const body = {};
    if (text.value !== m.text) body.text = text.value;
    if (context.value !== m.context) body.context = context.value;
    if (csv(tags.value).join(",") !== (m.tags || []).join(",")) body.tags = csv(tags.value);
    if (validFrom.value !== local(m.valid_from)) body.valid_from = utc(validFrom.value);
    if (validTo.value !== local(m.valid_to)) body.valid_to = utc(validTo.value);
    if (!Object.keys(body).length) { toast("Nothing changed", true); return undefined; }
    if (reason.value.trim()) body.reason = reason.value.trim();
    return change(body, "Memory updated");
  };
  const ended = m.invalidated_at || m.superseded_by;
  const state = m.invalidated_at ? `invalidated ${when(m.invalidated_at)}${m.invalidation_reason ? ` (${m.invalidation_reason})` : ""}`
    : m.valid_to ? `superseded ${when(m.valid_to)}` : "valid";
  const versions = h("div", { id: "memory-history" }, history.versions.map((v) => h("div", { class: "version", "data-version": v.version },
    h("div", {}, h("b", {}, `v${v.version}`), ` ${when(v.at)} · `, h("span", { class: "badge", "data-action": v.action }, v.action),
      v.actor ? ` by ${v.actor}` : "", v.reason ? ` · ${v.reason}` : ""),
    Object.entries(v.changes || {}).map(([field, [before, after]]) => h("div", { class: "meta" },
      `${field}: ${JSON.stringify(before)} → ${JSON.stringify(after)}`)))));
  const box = h("div", { class: "panel", id: "memory-detail" },
    h("h3", {}, "Memory"),
    h("div", { class: "text" }, m.text),
    h("table", {}, h("tbody", {}, [["id", m.id], ["state", state], ["type", m.type], ["context", m.context], ["created", when(m.created_at)],
      ["mentioned", when(m.mentioned_at)], ["occurred", m.occurred_start ? `${when(m.occurred_start)} – ${when(m.occurred_end)}` : "—"],
      ["true", `from ${when(m.valid_from)}${m.valid_to ? ` until ${when(m.valid_to)}` : ""}`],
      ["replaced by", m.superseded_by || "—"],
      ["entities", (m.entities || []).join(", ")], ["tags", (m.tags || []).join(", ")], ["document", m.document_id || "—"]]
      .map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v))))),
    Object.keys(m.metadata || {}).length ? h("pre", {}, JSON.stringify(m.metadata, null, 2)) : null,
    lineage.sources.length ? [h("h3", {}, "Extracted from"), lineage.sources.map((s) => h("pre", { "data-source": s.id }, s.text))] : null,
    lineage.facts.length ? [h("h3", {}, "Facts extracted from it"), lineage.facts.map((f) => h("pre", { "data-fact": f.id }, f.text))] : null,
    h("h3", {}, "Correct it"),
    h("form", { id: "memory-edit", onsubmit: (e) => { e.preventDefault(); save(); } },
      h("div", { class: "row" }, text),
      h("div", { class: "row spaced" }, h("label", {}, "context", context), h("label", {}, "tags", tags),
        h("label", {}, "true from", validFrom), h("label", {}, "true until", validTo)),
      h("div", { class: "row" }, reason, h("button", { class: "primary", type: "submit" }, "Save"))),
    h("div", { class: "row" },
      ended ? h("button", { name: "restore", onclick: () => change({ state: "valid", ...(reason.value.trim() ? { reason: reason.value.trim() } : {}) },
        "Memory restored") }, "Restore (make valid)")
        : h("button", { name: "invalidate", onclick: () => change({ state: "invalidated", ...(reason.value.trim() ? { reason: reason.value.trim() } : {}) },
          "Memory invalidated") }, "Invalidate"),
      h("button", { class: "danger", name: "forget", onclick: () => attempt(async () => {
        const preview = await api("DELETE", `${base}/memories/${id}?dry_run=true`);
        if (!confirm(`Forget this memory for good? ${forgetting(preview)} Invalidating keeps it for audit instead.`)) return;
        const gone = await api("DELETE", `${base}/memories/${id}`);
        box.remove();
        toast(forgotten(gone));
        if (onChange) await onChange();
      }) }, "Forget memory"),
      h("button", { onclick: () => box.remove() }, "Close")),
    h("h3", {}, "History"),
    versions,
    history.supersedes.length ? h("p", { class: "muted" }, `Replaced: ${history.supersedes.join(", ")}`) : null);
  document.getElementById("memory-detail")?.remove();
  document.getElementById("tab").prepend(box);
  box.scrollIntoView({ block: "nearest" });
}

async function searchTab(body, base) {
  const q = h("input", { name: "query", placeholder: "Ask the bank…", class: "grow", required: true });
  const mode = h("select", { name: "mode" }, ["hybrid", "vector", "keyword"].map((m) => h("option", {}, m)));
  const topK = h("input", { name: "top_k", type: "number", min: 1, max: 50, value: 20, class: "narrow" });
  const strict = h("select", { name: "strictness" }, [0, 1, 2, 3, 4, 5].map((s) => h("option", {}, s)));
  const tags = h("input", { name: "tags", placeholder: "tags, comma-separated" });
  const match = h("select", { name: "tags_match" }, ["any", "all", "any_strict", "all_strict", "exact"].map((m) => h("option", {}, m)));
  const types = h("select", { name: "types" }, h("option", { value: "" }, "all types"), h("option", {}, "world"), h("option", {}, "experience"));
  const filter = h("input", { name: "filter", placeholder: 'filter, e.g. metadata.speaker = "Ann"', class: "grow" });
  const asOf = h("input", { name: "as_of", type: "datetime-local" });
  const superseded = h("input", { name: "include_superseded", type: "checkbox" });
  const results = h("div", { class: "panel", id: "results" }, h("p", { class: "muted" }, "Results appear here."));
  const run = () => attempt(async () => {
    const req = { query: q.value, mode: mode.value, top_k: Number(topK.value), strictness: Number(strict.value),
      tags_match: match.value };
    if (csv(tags.value).length || match.value === "exact") req.tags = csv(tags.value);
    if (types.value) req.types = [types.value];
    if (filter.value.trim()) req.filter = filter.value.trim();
    if (asOf.value) req.as_of = new Date(asOf.value).toISOString();
    if (superseded.checked) req.include_superseded = true;
    const r = await api("POST", `${base}/recall`, req);
    fill(results, h("p", { class: "muted" }, `${r.results.length} results · ${r.total_tokens} tokens`),
      r.results.map((m) => memoryCard(m, base, run)));
  });
  fill(body, 
    h("form", { class: "panel", onsubmit: (e) => { e.preventDefault(); run(); } },
      h("div", { class: "row" }, q, h("button", { class: "primary", type: "submit" }, "Recall")),
      h("div", { class: "row spaced" }, h("label", {}, "mode", mode), h("label", {}, "top k", topK),
        h("label", {}, "strictness", strict), h("label", {}, "tags", tags), h("label", {}, "match", match),
        h("label", {}, "type", types), h("label", { class: "grow" }, "filter", filter),
        h("label", { title: "what was true then (default: now)" }, "as of", asOf),
        h("label", {}, superseded, " superseded too"))),
    results);
}

// ---- recall playground: why each memory came back ---------------------------------------------
// Recall with trace: each result's score from each arm, its context and the fused score it is
// ranked by, beside the weights that combined them (engine/search/trace.py).
async function playgroundTab(body, base) {
  const q = h("input", { name: "playground_query", placeholder: "Ask the bank…", class: "grow", required: true });
  const mode = h("select", { name: "playground_mode" }, ["hybrid", "vector", "keyword"].map((m) => h("option", {}, m)));
  const tokens = h("input", { name: "playground_max_tokens", type: "number", min: 1, value: 4096, class: "narrow" });
  const at = h("input", { name: "playground_query_timestamp", type: "datetime-local",
    title: "the time relative expressions in the query (\"last May\") count from; default now" });
  const out = h("div", { class: "panel", id: "playground" }, h("p", { class: "muted" },
    "Each memory recall returns, with the score each arm gave it and the score it is ranked by."));
  const num = (x) => (x === null || x === undefined ? "—" : Number(x).toFixed(3));
  const run = () => attempt(async () => {
    const req = { query: q.value, mode: mode.value, max_tokens: Number(tokens.value), trace: true };
    if (at.value) req.query_timestamp = new Date(at.value).toISOString();
    const r = await api("POST", `${base}/recall`, req);
    const w = r.trace.weights;
    const own = [`${w.semantic} × semantic`, `${w.keyword} × keyword ÷ ${num(r.trace.keyword_best)}`, `${w.time} × time`];
    const formula = w.neighbour === undefined ? `score = ${own.join(" + ")}`
      : `score = own + ${w.neighbour} × neighbour + ${w.source} × session; own = ${own.join(" + ")}`;
    const top = r.trace.results.length ? r.trace.results[0].score : 1;
    const bar = (x) => {  // sized through the CSSOM: the console's policy refuses style attributes
      const fillEl = h("div");
      fillEl.style.width = `${Math.max(0, Math.min(100, (100 * x) / (top || 1)))}%`;
      return h("div", { class: "bar" }, fillEl);
    };
    fill(out, h("p", { class: "muted", id: "playground-formula" }, `${r.results.length} memories · ${r.total_tokens} tokens · ${formula}`),
      h("table", {}, h("thead", {}, h("tr", {}, ["#", "memory", "found by", "semantic", "keyword", "time", "own", "neighbour",
        "session", "score"].map((c) => h("th", {}, c)))),
        h("tbody", {}, r.results.map((m, i) => {
          const t = r.trace.results[i];
          return h("tr", { "data-memory": m.id },
            h("td", {}, i + 1), h("td", { class: "text" }, short(m.text, 240)), h("td", {}, t.arms.join(", ")),
            h("td", { "data-arm": "semantic" }, num(t.semantic)), h("td", { "data-arm": "keyword" }, num(t.keyword)),
            h("td", { "data-arm": "time" }, t.time === null ? "—" : t.time), h("td", {}, num(t.base)),
            h("td", {}, num(t.neighbour)), h("td", {}, num(t.source)),
            h("td", { "data-arm": "score" }, num(t.score), bar(t.score)));
        }))));
  });
  fill(body,
    h("form", { class: "panel", onsubmit: (e) => { e.preventDefault(); run(); } },
      h("div", { class: "row" }, q, h("button", { class: "primary", type: "submit" }, "Explain")),
      h("div", { class: "row spaced" }, h("label", {}, "mode", mode), h("label", {}, "max tokens", tokens),
        h("label", {}, "query time", at))),
    out);
}

async function memoriesTab(body, base) {
  let offset = 0;
  const type = h("select", { name: "type" }, h("option", { value: "" }, "all types"), h("option", {}, "world"), h("option", {}, "experience"));
  const q = h("input", { name: "q", placeholder: "text contains…" });
  const tags = h("input", { name: "tags", placeholder: "tags, comma-separated" });
  const doc = h("input", { name: "document_id", placeholder: "document id" });
  const list = h("div", { class: "panel", id: "memory-list" });
  const load = async () => {
    const params = new URLSearchParams({ limit: PAGE, offset });
    if (type.value) params.set("type", type.value);
    if (q.value) params.set("q", q.value);
    if (doc.value) params.set("document_id", doc.value);
    csv(tags.value).forEach((t) => params.append("tags", t));
    const r = await api("GET", `${base}/memories?${params}`);
    fill(list, 
      h("div", { class: "pager" }, h("button", { disabled: offset === 0, onclick: () => { offset -= PAGE; load(); } }, "← Newer"),
        h("span", { class: "muted" }, r.total ? `${offset + 1}–${offset + r.memories.length} of ${r.total}` : "No memories"),
        h("button", { disabled: offset + PAGE >= r.total, onclick: () => { offset += PAGE; load(); } }, "Older →")),
      r.memories.map((m) => memoryCard(m, base, load)));
  };
  const purge = () => attempt(async () => {
    const preview = await api("POST", `${base}/memories/purge`, { dry_run: true });
    if (!preview.memories) { toast("Nothing to purge: no memory is invalidated or superseded"); return; }
    if (!confirm(`Forget for good the ${preview.memories} memories that are invalidated or superseded (kept for audit until now)?`)) return;
    toast(forgotten(await api("POST", `${base}/memories/purge`, {})));
    await load();
  });
  fill(body, 
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); offset = 0; attempt(load); } },
      type, q, tags, doc, h("button", { type: "submit" }, "Filter"), h("span", { class: "grow" }),
      h("button", { type: "button", class: "danger", name: "purge", onclick: purge }, "Purge what is no longer true")),
    list);
  await load();
}

async function entitiesTab(body, base, bankId) {
  let offset = 0;
  const q = h("input", { name: "q", placeholder: "name contains…" });
  const list = h("div", { id: "entity-list" });
  const load = async () => {
    const params = new URLSearchParams({ limit: PAGE, offset });
    if (q.value) params.set("q", q.value);
    const r = await api("GET", `${base}/entities?${params}`);
    fill(list, 
      h("div", { class: "pager" }, h("button", { disabled: offset === 0, onclick: () => { offset -= PAGE; load(); } }, "← Prev"),
        h("span", { class: "muted" }, `${r.total} entities`),
        h("button", { disabled: offset + PAGE >= r.total, onclick: () => { offset += PAGE; load(); } }, "Next →")),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Entity"), h("th", {}, "Kind"), h("th", {}, "Memories"))),
        h("tbody", {}, r.entities.map((e) => h("tr", {}, h("td", {}, e.name), h("td", {}, e.kind), h("td", {}, e.mention_count))))));
  };
  // "Forget everything about Bob": a dry run lists what would go, then one click forgets it all.
  const who = h("input", { name: "forget_name", placeholder: "a name, e.g. Bob", required: true });
  const preview = h("div", { id: "forget-preview" });
  const forgetForm = h("form", { class: "panel", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
    const name = who.value.trim();
    const r = await api("POST", `${base}/entities/forget`, { name, dry_run: true });
    fill(preview, h("p", {}, r.memories ? `${r.memories} memories name ${name}:` : `No memory names ${name}.`),
      (r.would_forget || []).map((m) => h("div", { class: "result", "data-forget": m.id },
        h("span", { class: "badge" }, m.why), h("span", { class: "text" }, short(m.text, 200)))),
      r.memories ? h("button", { class: "danger", name: "forget_all", type: "button", onclick: () => attempt(async () => {
        if (!confirm(`Forget all ${r.memories} memories about ${name}, for good?`)) return;
        const gone = await api("POST", `${base}/entities/forget`, { name });
        fill(preview, h("p", {}, forgotten(gone)));
        who.value = "";
        await load();
      }, `Everything about ${name} was forgotten`) }, `Forget everything about ${name}`) : null);
  }); } },
  h("h3", {}, "Forget everything about a person"),
  h("div", { class: "row" }, who, h("button", { type: "submit" }, "Show what would go")), preview);
  fill(body, h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); offset = 0; attempt(load); } },
    q, h("button", { type: "submit" }, "Search")), list, forgetForm);
  await load();
}

// ---- mental models ------------------------------------------------------------------------------
async function modelsTab(body, base, bankId, openId) {
  const { mental_models: models } = await api("GET", `${base}/mental-models`);
  const name = h("input", { name: "name", placeholder: "name", required: true });
  const query = h("input", { name: "source_query", placeholder: "source query, e.g. What does the user prefer?", class: "grow", required: true });
  const tags = h("input", { name: "tags", placeholder: "tags, comma-separated" });
  const detail = h("div", { id: "model-detail" });
  fill(body, 
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      const r = await api("POST", `${base}/mental-models`, { name: name.value, source_query: query.value, tags: csv(tags.value) });
      await modelsTab(body, base, bankId, r.mental_model_id);
    }, "Mental model created; its content is being generated"); } },
    name, query, tags, h("button", { class: "primary", type: "submit" }, "Create model")),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Model"), h("th", {}, "Status"), h("th", {}, "Tags"), h("th", {}, "Last refresh"))),
      h("tbody", {}, models.length ? models.map((m) => h("tr", { class: "clickable", "data-model": m.mental_model_id,
        onclick: () => showModel(m.mental_model_id) },
      h("td", {}, m.name, h("div", { class: "meta" }, m.mental_model_id)),
      h("td", {}, h("span", { class: `badge ${m.status}` }, m.status), m.pending_operation_id ? h("span", { class: "badge running" }, "refreshing") : null,
        m.stale ? h("span", { class: "badge pending", "data-stale": "true" }, "stale: drew on a forgotten memory") : null),
      h("td", {}, (m.tags || []).join(", ")), h("td", {}, when(m.last_refreshed_at)))) : h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No mental models yet.")))),
    detail);
  if (openId) await showModel(openId);

  async function showModel(id) {
    const [m, history] = await Promise.all([api("GET", `${base}/mental-models/${id}`), api("GET", `${base}/mental-models/${id}/history`)]);
    const eName = h("input", { name: "edit_name", value: m.name });
    const eQuery = h("input", { name: "edit_source_query", value: m.source_query, class: "grow" });
    const eTags = h("input", { name: "edit_tags", value: (m.tags || []).join(", "), placeholder: "tags" });
    const eMax = h("input", { name: "edit_max_tokens", type: "number", min: 64, max: 32768, value: m.max_tokens, class: "narrow" });
    fill(detail, h("div", { class: "panel", "data-model-detail": id },
      h("h2", {}, m.name, " ", h("span", { class: `badge ${m.status}` }, m.status),
        m.pending_operation_id ? h("span", { class: "badge running" }, "refresh pending") : null,
        m.stale ? h("span", { class: "badge pending" }, "stale: drew on a forgotten memory") : null),
      h("div", { class: "meta" }, `last refresh ${when(m.last_refreshed_at)} · ${m.max_tokens} tokens at most`),
      m.last_error ? h("p", { class: "error" }, `Last error: ${m.last_error}`) : null,
      h("h3", {}, "Content"),
      h("div", { class: "text", id: "model-content" }, m.content || "(not generated yet)"),
      h("form", { class: "row spaced", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
        await api("PATCH", `${base}/mental-models/${id}`, { name: eName.value, source_query: eQuery.value, tags: csv(eTags.value),
          max_tokens: Number(eMax.value) });
        await showModel(id);
      }, "Mental model updated"); } }, eName, eQuery, eTags, eMax, h("button", { type: "submit" }, "Save")),
      h("div", { class: "row spaced" },
        h("button", { onclick: () => attempt(async () => {
          await api("POST", `${base}/mental-models/${id}/refresh`);
          await modelsTab(body, base, bankId, id);
        }, "Refresh queued") }, "Refresh now"),
        h("button", { onclick: () => attempt(() => modelsTab(body, base, bankId, id)) }, "Reload"),
        h("button", { class: "danger", onclick: () => attempt(async () => {
          if (!confirm(`Delete the mental model ${id}?`)) return;
          await api("DELETE", `${base}/mental-models/${id}`);
          await modelsTab(body, base);
        }, "Mental model deleted") }, "Delete")),
      h("h3", {}, `History (${history.length})`),
      history.map((v) => h("details", {}, h("summary", {}, `version ${v.version} · ${when(v.created_at)}`), h("pre", {}, v.content)))));
    detail.scrollIntoView({ block: "nearest" });
    if (m.pending_operation_id) {  // a refresh is queued or running: look again shortly, while this is shown
      setTimeout(() => { if (document.body.contains(detail)) modelsTab(body, base, bankId, id).catch(() => {}); }, 1500);
    }
  }
}

// ---- the entity graph: who and what the memories name together, drawn -----------------------------
const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, ...kids) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) el.setAttribute(k, v);
  for (const kid of kids.flat()) if (kid !== null && kid !== undefined) el.append(kid instanceof Node ? kid : String(kid));
  return el;
}

// A force-directed layout (Fruchterman-Reingold): linked entities pull together, all push apart.
// It starts from a circle and runs a fixed number of steps, so the same graph is drawn the same way.
function layout(nodes, edges, width, height) {
  const n = nodes.length;
  const at = new Map(nodes.map((d, i) => [d.id, i]));
  const pos = nodes.map((_, i) => ({ x: width / 2 + Math.cos((2 * Math.PI * i) / n) * width / 3,
    y: height / 2 + Math.sin((2 * Math.PI * i) / n) * height / 3 }));
  const links = edges.map((e) => [at.get(e.source), at.get(e.target), e.count]).filter(([a, b]) => a !== undefined && b !== undefined);
  const k = Math.sqrt((width * height) / Math.max(n, 1)) * 0.55;
  let heat = width / 8;
  for (let step = 0; step < 250; step++) {
    const move = pos.map(() => ({ x: 0, y: 0 }));
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        const dx = pos[i].x - pos[j].x, dy = pos[i].y - pos[j].y;
        const d = Math.max(0.5, Math.hypot(dx, dy)), f = (k * k) / d;
        move[i].x += (dx / d) * f; move[i].y += (dy / d) * f;
        move[j].x -= (dx / d) * f; move[j].y -= (dy / d) * f;
      }
    }
    for (const [a, b, w] of links) {
      const dx = pos[a].x - pos[b].x, dy = pos[a].y - pos[b].y;
      const d = Math.max(0.5, Math.hypot(dx, dy)), f = ((d * d) / k) * (1 + Math.log(w));
      move[a].x -= (dx / d) * f; move[a].y -= (dy / d) * f;
      move[b].x += (dx / d) * f; move[b].y += (dy / d) * f;
    }
    for (let i = 0; i < n; i++) {
      move[i].x += (width / 2 - pos[i].x) * 0.05 * k / 10; move[i].y += (height / 2 - pos[i].y) * 0.05 * k / 10;
      const len = Math.max(0.01, Math.hypot(move[i].x, move[i].y)), by = Math.min(len, heat);
      pos[i].x = Math.min(width - 20, Math.max(20, pos[i].x + (move[i].x / len) * by));
      pos[i].y = Math.min(height - 20, Math.max(20, pos[i].y + (move[i].y / len) * by));
    }
    heat = Math.max(1, heat * 0.97);
  }
  return pos;
}

async function graphTab(body, base) {
  const nodes = h("input", { name: "graph_nodes", type: "number", min: 1, max: 1000, value: 80, class: "narrow" });
  const minCount = h("input", { name: "graph_min_count", type: "number", min: 1, value: 1, class: "narrow" });
  const drawing = h("div", { class: "panel graph", id: "entity-graph" });
  const detail = h("div", { id: "entity-detail" });
  const show = async (entity) => {
    const e = await api("GET", `${base}/entities/${entity.id}`);
    fill(detail, h("div", { class: "panel", "data-entity-detail": e.id }, h("h3", {}, e.name, " ", h("span", { class: "badge" }, e.kind)),
      h("div", { class: "meta" }, `${e.mention_count} memories · first ${when(e.first_seen)} · last ${when(e.last_seen)}`),
      e.memories.map((m) => h("div", { class: "result", "data-memory": m.memory_id }, h("div", { class: "text" }, m.text),
        h("div", { class: "meta" }, when(m.created_at))))));
  };
  const draw = async () => {
    const g = await api("GET", `${base}/entities/graph?nodes=${Number(nodes.value) || 80}&min_count=${Number(minCount.value) || 1}`);
    if (!g.nodes.length) return fill(drawing, h("p", { class: "muted" }, "No entities yet: retained memories that name people, places or things make them."));
    const width = 1000, height = 640;
    const pos = layout(g.nodes, g.edges, width, height);
    const index = new Map(g.nodes.map((d, i) => [d.id, i]));
    const most = Math.max(...g.nodes.map((d) => d.mention_count));
    const radius = (d) => 5 + 14 * Math.sqrt(d.mention_count / most);
    const labelled = new Set(g.nodes.slice(0, 40).map((d) => d.id));
    const picture = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "entity graph" },
      g.edges.map((e) => {
        const a = pos[index.get(e.source)], b = pos[index.get(e.target)];
        return svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: "edge", "stroke-width": 1 + Math.log2(e.count),
          "data-edge": `${e.source}-${e.target}` }, svg("title", {}, `${e.count} memories`));
      }),
      g.nodes.map((d, i) => svg("g", { class: `node ${d.kind}`, "data-entity": d.id, transform: `translate(${pos[i].x},${pos[i].y})`,
        tabindex: 0 },
        svg("circle", { r: radius(d) }), svg("title", {}, `${d.name}: ${d.mention_count} memories`),
        labelled.has(d.id) ? svg("text", { x: radius(d) + 3, y: 4 }, d.name) : null)));
    for (const el of picture.querySelectorAll("g.node")) {
      const entity = g.nodes.find((d) => String(d.id) === el.getAttribute("data-entity"));
      el.addEventListener("click", () => attempt(() => show(entity)));
      el.addEventListener("keydown", (e) => { if (e.key === "Enter") attempt(() => show(entity)); });
    }
    fill(drawing, h("div", { class: "meta" }, `${g.nodes.length} entities, ${g.edges.length} pairs named together · click one for its memories`), picture);
  };
  fill(body, h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); attempt(draw); } },
    h("label", {}, "entities", nodes), h("label", {}, "pairs named at least", minCount), h("button", { type: "submit" }, "Draw")),
  drawing, detail);
  await draw();
}

// ---- directives: standing instructions reflect and mental models follow --------------------------
async function directivesTab(body, base) {
  const name = h("input", { name: "directive_name", placeholder: "name, e.g. Language", required: true });
  const content = h("input", { name: "directive_content", placeholder: "instruction, e.g. Answer in French.", class: "grow", required: true });
  const priority = h("input", { name: "directive_priority", type: "number", value: 0, class: "narrow", title: "higher first" });
  const tags = h("input", { name: "directive_tags", placeholder: "tags (empty: every reflect)" });
  const list = h("div", { id: "directive-list" });
  const load = async () => {
    const { directives } = await api("GET", `${base}/directives?active_only=false&limit=1000`);
    fill(list, h("table", {}, h("thead", {}, h("tr", {}, ["Priority", "Directive", "Tags", "Active", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, directives.length ? directives.map((d) => h("tr", { "data-directive": d.directive_id },
        h("td", {}, d.priority), h("td", {}, h("b", {}, d.name), h("div", { class: "text" }, d.content)),
        h("td", {}, d.tags.length ? d.tags.join(", ") : h("span", { class: "muted" }, "every reflect")),
        h("td", {}, h("label", { class: "inline" }, h("input", { type: "checkbox", name: "active", checked: d.is_active,
          onchange: (e) => attempt(async () => { await api("PATCH", `${base}/directives/${d.directive_id}`, { is_active: e.target.checked }); await load(); },
            e.target.checked ? "Directive on" : "Directive off") }), d.is_active ? "on" : "off")),
        h("td", {}, h("button", { class: "danger", onclick: () => attempt(async () => {
          if (!confirm(`Delete the directive ${d.name}?`)) return;
          await api("DELETE", `${base}/directives/${d.directive_id}`);
          await load();
        }, "Directive deleted") }, "Delete"))))
        : h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No directives: reflect follows only its own instructions.")))));
  };
  fill(body, h("p", { class: "muted" }, "Standing instructions put into every reflect's prompt (and mental models' refreshes), ",
    "highest priority first. Tagged ones apply only to reflects whose tags match."),
  h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
    await api("POST", `${base}/directives`, { name: name.value, content: content.value, priority: Number(priority.value) || 0, tags: csv(tags.value) });
    name.value = ""; content.value = "";
    await load();
  }, "Directive added"); } }, name, content, h("label", {}, "priority", priority), tags, h("button", { class: "primary", type: "submit" }, "Add")),
  list);
  await load();
}

// ---- webhooks and their deliveries -----------------------------------------------------------------
const EVENTS = ["retain.completed", "extraction.completed", "mental_model.refreshed", "operation.failed", "consolidation.completed"];

async function webhooksTab(body, base) {
  const url = h("input", { name: "webhook_url", type: "url", placeholder: "https://example.com/hindsight-events", class: "grow", required: true });
  const boxes = EVENTS.map((e, i) => h("input", { type: "checkbox", name: "event", value: e, checked: i === 0 }));
  const shown = h("div", { id: "new-webhook" });
  const list = h("div", { id: "webhook-list" });
  const deliveries = h("div", { id: "delivery-list" });
  const showDeliveries = async (w) => {
    const { deliveries: found } = await api("GET", `${base}/webhooks/${w.webhook_id}/deliveries?limit=50`);
    fill(deliveries, h("div", { class: "panel", "data-deliveries": w.webhook_id }, h("h3", {}, `Deliveries to ${w.url}`),
      h("table", {}, h("thead", {}, h("tr", {}, ["Queued", "Event", "Status", "Attempts", "Last answer", "Error"].map((t) => h("th", {}, t)))),
        h("tbody", {}, found.length ? found.map((d) => h("tr", { "data-delivery": d.delivery_id }, h("td", {}, when(d.created_at)),
          h("td", {}, d.event_type), h("td", {}, h("span", { class: `badge ${{ delivered: "succeeded", pending: "queued", delivering: "running" }[d.status] || d.status}` }, d.status)),
          h("td", {}, `${d.attempts}/${d.max_attempts}`), h("td", {}, d.last_status_code ?? "—"), h("td", { class: "error" }, short(d.last_error || "", 200))))
          : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No deliveries yet.")))),
      h("button", { onclick: () => attempt(() => showDeliveries(w)) }, "Reload")));
  };
  const load = async () => {
    const { webhooks } = await api("GET", `${base}/webhooks`);
    fill(list, h("table", {}, h("thead", {}, h("tr", {}, ["URL", "Events", "Enabled", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, webhooks.length ? webhooks.map((w) => h("tr", { "data-webhook": w.webhook_id },
        h("td", {}, w.url, h("div", { class: "meta" }, w.webhook_id)), h("td", {}, w.event_types.join(", ")),
        h("td", {}, w.enabled ? "yes" : "no"),
        h("td", {}, h("div", { class: "row" },
          h("button", { name: "deliveries", onclick: () => attempt(() => showDeliveries(w)) }, "Deliveries"),
          h("button", { name: "test", onclick: () => attempt(async () => {
            await api("POST", `${base}/webhooks/${w.webhook_id}/test`);
            await new Promise((r) => setTimeout(r, 600));
            await showDeliveries(w);
          }, "Test event queued") }, "Send a test"),
          h("button", { name: "toggle", onclick: () => attempt(async () => {
            await api("PATCH", `${base}/webhooks/${w.webhook_id}`, { enabled: !w.enabled });
            await load();
          }) }, w.enabled ? "Disable" : "Enable"),
          h("button", { class: "danger", onclick: () => attempt(async () => {
            if (!confirm(`Delete the webhook to ${w.url}?`)) return;
            await api("DELETE", `${base}/webhooks/${w.webhook_id}`);
            fill(deliveries);
            await load();
          }, "Webhook deleted") }, "Delete")))))
        : h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No webhooks.")))));
  };
  fill(body, h("p", { class: "muted" }, "Events of this bank POSTed to your URL, signed: X-Hindsight-Signature is sha256= and the ",
    "HMAC-SHA256 of the body with the webhook's secret. Failed deliveries are retried with growing waits."),
  h("form", { class: "panel", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
    const event_types = boxes.filter((b) => b.checked).map((b) => b.value);
    const w = await api("POST", `${base}/webhooks`, { url: url.value.trim(), event_types });
    fill(shown, h("div", { class: "panel" }, h("p", {}, `Webhook ${w.webhook_id} created. Its signing secret, to verify deliveries: copy it now, it is not shown again.`),
      h("div", { class: "secret" }, w.secret)));
    url.value = "";
    await load();
  }); } }, h("div", { class: "row" }, url, h("button", { class: "primary", type: "submit" }, "Add webhook")),
  h("div", { class: "row spaced" }, boxes.map((b) => h("label", { class: "inline" }, b, b.value)))),
  shown, list, deliveries);
  await load();
}

// ---- the knowledge base: pages and folders -----------------------------------------------------------
async function knowledgeTab(body, base) {
  const name = h("input", { name: "page_name", placeholder: "page name", required: true });
  const content = h("textarea", { name: "page_content", placeholder: "what the page says (markdown); it is retained, so recall finds it" });
  const folderName = h("input", { name: "folder_name", placeholder: "folder name", required: true });
  const where = h("select", { name: "page_folder" });
  const tree = h("div", { class: "panel", id: "knowledge-tree" });
  const view = h("div", { id: "knowledge-page" });
  const open = async (id) => {
    const p = await api("GET", `${base}/knowledge-base/pages/${id}`);
    fill(view, h("div", { class: "panel", "data-page": p.node_id }, h("h3", {}, p.name, " ", h("span", { class: "badge" }, p.page_kind)),
      p.source_query ? h("div", { class: "meta" }, `answers: ${p.source_query}`) : null,
      h("div", { class: "text" }, p.content || "(not generated yet)"),
      h("button", { class: "danger", onclick: () => attempt(async () => {
        if (!confirm(`Delete the page ${p.name}?`)) return;
        await api("DELETE", `${base}/knowledge-base/nodes/${p.node_id}`);
        fill(view);
        await load();
      }, "Page deleted") }, "Delete page")));
  };
  const load = async () => {
    const t = await api("GET", `${base}/knowledge-base/tree`);
    const folders = [];
    const item = (n, depth) => {
      if (n.kind === "folder") folders.push([n.node_id, `${"  ".repeat(depth)}${n.name}`]);
      return h("li", { "data-node": n.node_id }, n.kind === "folder" ? h("b", {}, `${n.name}/`)
        : h("a", { href: "#", onclick: (e) => { e.preventDefault(); attempt(() => open(n.node_id)); } }, n.name),
      n.children.length ? h("ul", {}, n.children.map((c) => item(c, depth + 1))) : null);
    };
    fill(tree, t.roots.length ? h("ul", {}, t.roots.map((n) => item(n, 0))) : h("p", { class: "muted" }, "No pages yet."));
    fill(where, h("option", { value: "" }, "top"), folders.map(([id, label]) => h("option", { value: id }, label)));
  };
  fill(body,
    h("form", { class: "panel", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      const made = await api("POST", `${base}/knowledge-base/pages`, { name: name.value, content: content.value, parent_id: where.value || null });
      name.value = ""; content.value = "";
      await load();
      await open(made.page_id);
    }, "Page written"); } }, h("h3", {}, "Write a page"), h("div", { class: "row" }, name, h("label", {}, "in", where)), content,
    h("button", { class: "primary", type: "submit" }, "Save page")),
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      await api("POST", `${base}/knowledge-base/folders`, { name: folderName.value, parent_id: where.value || null });
      folderName.value = "";
      await load();
    }, "Folder made"); } }, folderName, h("button", { type: "submit" }, "Make folder")),
    tree, view);
  await load();
}

// ---- documents --------------------------------------------------------------------------------
const toBase64 = (file) => new Promise((resolve, reject) => {
  const reader = new FileReader();
  reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
  reader.onerror = () => reject(reader.error);
  reader.readAsDataURL(file);
});

async function documentsTab(body, base) {
  let offset = 0;
  const files = h("input", { type: "file", name: "files", multiple: true });
  const tags = h("input", { name: "doc_tags", placeholder: "access tags (optional)" });
  const bar = h("div", {});
  const progress = h("div", { class: "progress", id: "import-progress", hidden: true }, bar);
  const status = h("span", { class: "muted", id: "import-status" });
  const list = h("div", { id: "document-list" });
  const q = h("input", { name: "doc_query", placeholder: "search the documents…", class: "grow" });
  const found = h("div", { id: "document-results" });

  const load = async () => {
    const { documents } = await api("GET", `${base}/documents?limit=${PAGE}&offset=${offset}`);
    fill(list, 
      h("div", { class: "pager" }, h("button", { disabled: offset === 0, onclick: () => { offset -= PAGE; load(); } }, "← Prev"),
        h("button", { disabled: documents.length < PAGE, onclick: () => { offset += PAGE; load(); } }, "Next →")),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Document"), h("th", {}, "Type"), h("th", {}, "Chunks"), h("th", {}, "Pages"),
        h("th", {}, "Tags"), h("th", {}, "Updated"), h("th", {}, ""))),
      h("tbody", {}, documents.length ? documents.map((d) => h("tr", { "data-document": d.source_name },
        h("td", {}, d.source_name, d.source_url ? h("div", { class: "meta" }, d.source_url) : null), h("td", {}, d.source_type),
        h("td", {}, d.chunk_count), h("td", {}, d.page_count ?? "—"), h("td", {}, d.tags.join(", ")), h("td", {}, when(d.updated_at)),
        h("td", {}, h("button", { class: "danger", onclick: () => attempt(async () => {
          if (!confirm(`Delete ${d.source_name}?`)) return;
          await api("DELETE", `${base}/documents/${d.document_id}`);
          await load();
        }, "Document deleted") }, "Delete")))) : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No documents yet.")))));
  };

  const follow = async (opId) => {
    progress.hidden = false;
    for (;;) {
      const op = await api("GET", `${base}/operations/${opId}`);
      const p = op.progress || {};
      bar.style.width = p.total ? `${Math.round((100 * (p.done || 0)) / p.total)}%` : "5%";
      status.textContent = `${op.status}${p.total ? ` · ${p.done || 0}/${p.total} files` : ""}`;
      if (["succeeded", "failed", "cancelled"].includes(op.status)) {
        bar.style.width = "100%";
        const outcomes = (op.result && op.result.files) || [];
        status.textContent = `${op.status}: ${outcomes.map((f) => `${f.name} ${f.status}${f.error ? ` (${f.error})` : ""}`).join(", ")}`;
        await load();
        return op;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  fill(body, 
    h("form", { class: "panel", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      const chosen = [...files.files];
      if (!chosen.length) throw new Error("Choose one or more files");
      const payload = { files: await Promise.all(chosen.map(async (f) => ({ name: f.name, content_base64: await toBase64(f) }))),
        tags: csv(tags.value) };
      const accepted = await api("POST", `${base}/documents`, payload);
      await follow(accepted.operation_id);
    }); } },
    h("h3", {}, "Import documents (TXT, Markdown, HTML, PDF, DOCX)"),
    h("div", { class: "row" }, files, tags, h("button", { class: "primary", type: "submit" }, "Import"), progress, status)),
    h("form", { class: "panel", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      const r = await api("POST", `${base}/documents/query`, { query: q.value, top_k: 10 });
      fill(found, r.results.length ? r.results.map((c) => h("div", { class: "result", "data-chunk": c.chunk_id },
        h("div", { class: "meta" }, `${c.file_path}${c.page_numbers.length ? ` · page ${c.page_numbers.join(", ")}` : ""} · score ${c.score}`),
        c.headline ? h("b", {}, c.headline) : null, h("div", { class: "text" }, short(c.content, 600)))) : h("p", { class: "muted" }, "Nothing found."));
    }); } }, h("div", { class: "row" }, q, h("button", { type: "submit" }, "Search documents")), found),
    list);
  await load();
}

// ---- operations, usage, settings -------------------------------------------------------------------
async function operationsTab(body, base) {
  const status = h("select", { name: "op_status" }, h("option", { value: "" }, "any status"),
    ["queued", "running", "succeeded", "failed", "cancelled"].map((s) => h("option", {}, s)));
  const auto = h("input", { type: "checkbox", checked: true });
  const table = h("div", { id: "operation-list" });
  const load = async () => {
    const params = new URLSearchParams({ limit: 100 });
    if (status.value) params.set("status", status.value);
    const { operations } = await api("GET", `${base}/operations?${params}`);
    fill(table, h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Created"), h("th", {}, "Type"), h("th", {}, "Status"),
      h("th", {}, "Attempts"), h("th", {}, "Progress / error"), h("th", {}, ""))),
    h("tbody", {}, operations.length ? operations.map((o) => h("tr", { "data-operation": o.operation_id },
      h("td", {}, when(o.created_at), h("div", { class: "meta" }, o.operation_id)), h("td", {}, o.type),
      h("td", {}, h("span", { class: `badge ${o.status}` }, o.status)), h("td", {}, `${o.attempts}/${o.max_attempts}`),
      h("td", {}, o.progress ? `${o.progress.done ?? 0}/${o.progress.total ?? "?"}` : "", o.error ? h("div", { class: "error" }, short(o.error, 300)) : null),
      h("td", {}, ["queued", "running"].includes(o.status) ? h("button", { class: "danger", onclick: () => attempt(async () => {
        await api("POST", `${base}/operations/${o.operation_id}/cancel`);
        await load();
      }, "Operation cancelled") }, "Cancel") : null))) : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No operations.")))));
  };
  fill(body, h("div", { class: "panel row" }, h("label", {}, "status", status),
    h("label", { class: "inline" }, auto, "refresh every 2 s"), h("button", { onclick: () => attempt(load) }, "Reload")), table);
  status.addEventListener("change", () => attempt(load));
  await load();
  const timer = setInterval(() => {
    if (!document.body.contains(table)) return clearInterval(timer);
    if (auto.checked) load().catch(() => {});
  }, 2000);
}

async function usageTab(body, base) {
  const [u, log] = await Promise.all([api("GET", `${base}/usage`), api("GET", `${base}/llm-requests?limit=50`)]);
  const money = (v) => (v == null ? "—" : `$${v.toFixed(4)}`);
  fill(body, 
    h("div", { class: "stats panel" },
      h("div", { class: "stat" }, h("b", {}, u.total.calls), "LLM calls"),
      h("div", { class: "stat" }, h("b", {}, u.total.prompt_tokens), "prompt tokens"),
      h("div", { class: "stat" }, h("b", {}, u.total.completion_tokens), "completion tokens"),
      h("div", { class: "stat" }, h("b", {}, money(u.total.cost_usd)), "cost (where the model's price is known)")),
    h("table", {}, h("thead", {}, h("tr", {}, ["Operation", "Model", "Calls", "Prompt", "Completion", "Cost", "Last call"].map((t) => h("th", {}, t)))),
      h("tbody", {}, u.by_operation.length ? u.by_operation.map((r) => h("tr", {}, h("td", {}, r.operation), h("td", {}, r.model),
        h("td", {}, r.calls), h("td", {}, r.prompt_tokens), h("td", {}, r.completion_tokens), h("td", {}, money(r.cost_usd)),
        h("td", {}, when(r.last_call)))) : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No LLM calls for this bank.")))),
    h("h3", {}, `Recent calls (${log.total})`),
    h("table", { id: "llm-requests" }, h("thead", {}, h("tr", {}, ["When", "Operation", "Model", "Outcome", "Tokens", "Time", "Why it failed"]
      .map((t) => h("th", {}, t)))),
    h("tbody", {}, log.requests.length ? log.requests.map((c) => h("tr", { "data-call": c.id }, h("td", {}, when(c.created_at)),
      h("td", {}, c.operation), h("td", {}, c.model), h("td", {}, h("span", { class: `badge ${c.status === "ok" ? "succeeded" : "failed"}` }, c.status)),
      h("td", {}, `${c.prompt_tokens} + ${c.completion_tokens}`), h("td", {}, c.duration_ms == null ? "—" : `${c.duration_ms} ms`),
      h("td", { class: "error" }, c.error || ""))) : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No LLM calls yet.")))));
}

// ---- applications connected through OAuth (claude.ai, ChatGPT, ...) --------------------------------
async function connectionsTab(body, base) {
  const { connections } = await api("GET", `${base}/connections`);
  const app = (c) => h("td", {}, c.client_name || c.client_id,
    c.client_name ? h("div", { class: "meta" }, c.client_id) : null, c.client_uri ? h("div", { class: "meta" }, c.client_uri) : null);
  fill(body,
    h("p", { class: "muted" }, "Applications a person approved on the consent page to use this bank over MCP. ",
      "Disconnecting one ends its access at once; it can ask again, and a person decides again."),
    h("table", {}, h("thead", {}, h("tr", {}, ["Application", "Access", "Approved with key", "Connected", "Last used", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, connections.length ? connections.map((c) => h("tr", { "data-connection": c.connection_id }, app(c),
        h("td", {}, c.access === "read" ? "read only" : "read and write"), h("td", {}, c.approved_by || "—"),
        h("td", {}, when(c.created_at)), h("td", {}, when(c.last_used_at)),
        h("td", {}, h("button", { class: "danger", onclick: () => attempt(async () => {
          if (!confirm(`Disconnect ${c.client_name || c.client_id}?`)) return;
          await api("DELETE", `${base}/connections/${c.connection_id}`);
          await connectionsTab(body, base);
        }, "Disconnected") }, "Disconnect"))))
        : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No application is connected to this bank.")))));
}

// ---- the audit log: who read or changed this bank, when, how it ended (never what it holds) --------
async function auditTab(body, base, bankId) {
  let offset = 0;
  const action = h("input", { name: "audit_action", placeholder: "operation, e.g. recall" });
  const transport = h("select", { name: "audit_transport" }, h("option", { value: "" }, "any transport"),
    ["http", "mcp", "system"].map((t) => h("option", {}, t)));
  const table = h("div", { id: "audit-list" });
  const params = () => {
    const p = new URLSearchParams({ limit: PAGE, offset });
    if (action.value.trim()) p.set("action", action.value.trim());
    if (transport.value) p.set("transport", transport.value);
    return p;
  };
  const load = async () => {
    let r;
    try {
      r = await api("GET", `${base}/audit-logs?${params()}`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 403) return fill(table, h("p", { class: "muted" }, e.message));
      throw e;
    }
    fill(table,
      h("div", { class: "pager" }, h("button", { disabled: offset === 0, onclick: () => { offset -= PAGE; attempt(load); } }, "← Newer"),
        h("span", { class: "muted" }, r.total ? `${offset + 1}–${offset + r.items.length} of ${r.total}` : "No records"),
        h("button", { disabled: offset + PAGE >= r.total, onclick: () => { offset += PAGE; attempt(load); } }, "Older →")),
      h("table", {}, h("thead", {}, h("tr", {}, ["When", "Transport", "Operation", "Outcome", "Who", "Took", "Request id"].map((t) => h("th", {}, t)))),
        h("tbody", {}, r.items.map((e) => h("tr", { "data-audit": e.id, "data-action": e.action },
          h("td", {}, when(e.started_at)), h("td", {}, e.transport),
          h("td", {}, e.action, e.route ? h("div", { class: "meta" }, `${e.method || ""} ${e.route}`) : null),
          h("td", {}, h("span", { class: `badge ${e.outcome === "ok" ? "succeeded" : "failed"}` }, `${e.status} ${e.outcome}`),
            e.detail ? h("div", { class: "meta" }, Object.entries(e.detail).map(([k, v]) => `${k} ${v}`).join(", ")) : null),
          h("td", {}, e.principal || "—"), h("td", {}, `${e.duration_ms} ms`), h("td", { class: "meta" }, e.request_id))))));
  };
  const exportLog = () => attempt(async () => {
    const p = params();
    p.delete("limit"); p.delete("offset");
    const r = await api("GET", `${base}/audit-logs/export?${p}`, undefined, { raw: true });
    const url = URL.createObjectURL(await r.blob());
    h("a", { href: url, download: `${bankId}.audit.jsonl` }).click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }, "Audit log downloaded");
  fill(body,
    h("p", { class: "muted" }, "Every request that read or changed this bank: when, over what, which operation, how it ended, ",
      "and who (an API key, an application connected through OAuth, the scheduler). What memories say is never recorded."),
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); offset = 0; attempt(load); } },
      action, transport, h("button", { type: "submit" }, "Filter"), h("span", { class: "grow" }),
      h("button", { type: "button", name: "audit_export", onclick: exportLog }, "Export (JSON lines)")),
    table);
  await load();
}

async function settingsTab(body, base, bankId) {
  const bank = await api("GET", base).catch(() => ({ retention_days: null, retention_by_tag: {} }));
  const days = h("input", { name: "retention_days", type: "number", min: 0, max: 36500, class: "narrow",
    value: bank.retention_days ?? "", placeholder: "forever" });
  const byTag = h("input", { name: "retention_by_tag", class: "grow", placeholder: "by tag, e.g. chat=30, scratch=7",
    value: Object.entries(bank.retention_by_tag || {}).map(([t, d]) => `${t}=${d}`).join(", ") });
  const retention = h("form", { class: "panel", id: "retention", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
    const tags = {};
    for (const pair of csv(byTag.value)) {
      const [tag, n] = [pair.slice(0, pair.lastIndexOf("=")).trim(), Number(pair.slice(pair.lastIndexOf("=") + 1))];
      if (!tag || !Number.isInteger(n) || n < 1) throw new Error(`"${pair}": give tag=days, e.g. chat=30`);
      tags[tag] = n;
    }
    await api("PATCH", base, { retention_days: days.value === "" ? 0 : Number(days.value), retention_by_tag: tags });
    await settingsTab(body, base, bankId);
  }, "Retention saved"); } },
  h("h3", {}, "Retention"),
  h("p", { class: "muted" }, "Memories older than this many days are forgotten by the server (with what was drawn from them). ",
    "A memory with a tag listed here is kept that tag's days instead (the shortest of its tags). Empty or 0: kept forever."),
  h("p", { id: "retention-now" }, bank.retention_days || Object.keys(bank.retention_by_tag || {}).length
    ? `Now: ${bank.retention_days ? `${bank.retention_days} days` : "kept forever"}${Object.keys(bank.retention_by_tag || {}).length
      ? `; by tag: ${Object.entries(bank.retention_by_tag).map(([t, d]) => `${t} ${d} days`).join(", ")}` : ""}`
    : "Now: memories are kept until they are forgotten."),
  h("div", { class: "row" }, h("label", {}, "days", days), h("label", { class: "grow" }, "by tag", byTag),
    h("button", { class: "primary", type: "submit" }, "Save retention")));
  const policy = h("select", { name: "on_conflict" }, ["rename", "skip", "replace"].map((p) => h("option", {}, p)));
  const file = h("input", { type: "file", name: "bank_file", accept: ".gz,application/gzip" });
  const confirmId = h("input", { name: "confirm_delete", placeholder: `type ${bankId} to delete` });
  fill(body, 
    retention,
    h("div", { class: "panel" }, h("h3", {}, "Export"),
      h("p", { class: "muted" }, "The whole bank as one gzip JSON Lines file: memories with their vectors, entities, documents, mental models. ",
        "A file taken is beyond the server's reach: forgetting later does not change it."),
      h("button", { class: "primary", onclick: () => attempt(async () => {
        const r = await api("GET", `${base}/export`, undefined, { raw: true });
        const url = URL.createObjectURL(await r.blob());
        h("a", { href: url, download: `${bankId}.hindsight.jsonl.gz` }).click();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
      }, "Export downloaded") }, "Export this bank")),
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      if (!file.files[0]) throw new Error("Choose an exported file");
      const r = await api("POST", `${base}/import?on_conflict=${policy.value}`, file.files[0], { contentType: "application/gzip" });
      toast(`Imported: ${JSON.stringify(r.imported)}`);
    }); } }, h("h3", { class: "grow" }, "Import a file into this bank"), file, h("label", {}, "on conflict", policy),
    h("button", { type: "submit" }, "Import")),
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      if (confirmId.value !== bankId) throw new Error(`Type ${bankId} to confirm`);
      await api("DELETE", base);
      location.hash = "#/";
    }, "Bank deleted"); } }, h("h3", { class: "grow" }, "Delete this bank and everything in it"), confirmId,
    h("button", { class: "danger", type: "submit" }, "Delete bank")));
}

// ---- API keys (admin) ----------------------------------------------------------------------------
async function keysPage() {
  let keys;
  try {
    keys = (await api("GET", "/v1/keys")).keys;
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) {
      return fill(view(), h("h1", {}, "API keys"), h("div", { class: "panel muted" }, "Managing keys needs an admin key."));
    }
    throw e;
  }
  const name = h("input", { name: "key_name", placeholder: "name, e.g. alice-laptop", required: true });
  const role = h("select", { name: "role" }, h("option", {}, "bank"), h("option", {}, "admin"));
  const banks = h("input", { name: "key_banks", placeholder: "banks, comma-separated" });
  const access = h("select", { name: "access" }, h("option", {}, "read_write"), h("option", {}, "read"));
  const shown = h("div", { id: "new-key" });
  fill(view(), 
    h("h1", {}, "API keys"),
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); attempt(async () => {
      const k = await api("POST", "/v1/keys", { name: name.value, role: role.value, banks: csv(banks.value), access: access.value });
      await keysPage();
      fill(document.getElementById("new-key"), h("div", { class: "panel" },
        h("p", {}, `Key ${k.key_id} created. Copy it now: it is not shown again.`), h("div", { class: "secret" }, k.key)));
    }); } }, name, role, banks, access, h("button", { class: "primary", type: "submit" }, "Create key")),
    shown,
    h("table", {}, h("thead", {}, h("tr", {}, ["Key", "Name", "Role", "Banks", "Access", "Created", "Last used", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, keys.map((k) => h("tr", { "data-key": k.key_id }, h("td", {}, k.key_id), h("td", {}, k.name), h("td", {}, k.role),
        h("td", {}, k.banks.join(", ")), h("td", {}, k.access), h("td", {}, when(k.created_at)), h("td", {}, when(k.last_used_at)),
        h("td", {}, k.revoked_at ? h("span", { class: "muted" }, `revoked ${when(k.revoked_at)}`) : h("button", { class: "danger",
          onclick: () => attempt(async () => {
            if (!confirm(`Revoke ${k.name}?`)) return;
            await api("DELETE", `/v1/keys/${k.key_id}`);
            await keysPage();
          }, "Key revoked") }, "Revoke")))))));
}

// ---- OAuth applications (admin): every client that registered or was named by a metadata document ----
async function applicationsPage() {
  let list;
  try {
    list = await api("GET", "/v1/oauth/clients?limit=1000");
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) {
      return fill(view(), h("h1", {}, "Applications"), h("div", { class: "panel muted" }, "Managing applications needs an admin key."));
    }
    throw e;
  }
  const { applications, total, unapproved } = list;
  const app = (a) => h("td", {}, a.client_name || a.client_id,
    a.client_name ? h("div", { class: "meta" }, a.client_id) : null, a.client_uri ? h("div", { class: "meta" }, a.client_uri) : null);
  fill(view(),
    h("h1", {}, "Applications"),
    h("p", { class: "muted" }, `${total} OAuth clients, ${unapproved} of them not yet approved by anyone. `,
      "An application nobody approves is deleted by itself a while after it registered (HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENT_TTL). ",
      "Deleting one ends its connections in every bank; it may register again, and a person decides again."),
    h("table", {}, h("thead", {}, h("tr", {}, ["Application", "Kind", "Redirects to", "Registered from", "Registered",
      "Approved", "Connections", ""].map((t) => h("th", {}, t)))),
    h("tbody", {}, applications.length ? applications.map((a) => h("tr", { "data-client": a.client_id }, app(a),
      h("td", {}, a.kind), h("td", {}, a.redirect_uris.map((u) => h("div", { class: "meta" }, short(u, 80)))),
      h("td", {}, a.registered_from || "—"), h("td", {}, when(a.created_at)),
      h("td", {}, a.approved_at ? when(a.approved_at) : h("span", { class: "muted" }, "never")), h("td", {}, a.connections),
      h("td", {}, h("button", { class: "danger", onclick: () => attempt(async () => {
        const ends = a.connections ? ` and end its ${a.connections} connection(s)` : "";
        if (!confirm(`Delete ${a.client_name || a.client_id}${ends}?`)) return;
        await api("DELETE", `/v1/oauth/clients/${enc(a.client_id)}`);
        await applicationsPage();
      }, "Application deleted") }, "Delete"))))
      : h("tr", {}, h("td", { colspan: 8, class: "muted" }, "No application has registered.")))));
}
