// The OAuth consent page: an application (claude.ai, ChatGPT, an MCP client) asks to use a memory
// bank; the person approves with an API key they hold, or refuses. The request's id arrives in the
// URL fragment (never sent to a server, so never in a log); the key goes only in the Authorization
// header of this page's own request. Everything the application says about itself is shown as
// text, never as HTML. See hindsight/oauth/consent.py.

const KEY = "hindsight.key"; // the console's key of this tab, if the person signed in there
const view = () => document.getElementById("view");
const requestId = new URLSearchParams(location.hash.slice(1)).get("request") || "";

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

async function post(path, body, key) {
  const headers = { "Content-Type": "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  const r = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
  let data = {};
  try { data = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok) throw new Error(data.message || r.statusText);
  return data;
}

function problem(message) {
  view().replaceChildren(h("div", { class: "panel login" }, h("h1", {}, "Cannot connect"), h("p", { class: "error" }, message),
    h("p", { class: "muted" }, "Start again from the application.")));
}

async function show() {
  if (!requestId) return problem("This page was opened without an authorization request.");
  let req;
  try {
    req = await post("/v1/oauth/consent/lookup", { request_id: requestId });
  } catch (e) {
    return problem(e.message);
  }
  const name = req.client_name || req.client_id;
  const bank = req.bank_id
    ? h("b", { id: "consent-bank" }, req.bank_id)
    : h("input", { id: "consent-bank", name: "bank_id", placeholder: "bank id", required: true, autocomplete: "off" });
  const readOnly = h("input", { type: "radio", name: "access", value: "read", id: "access-read" });
  const readWrite = h("input", { type: "radio", name: "access", value: "read_write", id: "access-read-write" });
  (req.access === "read" ? readOnly : readWrite).checked = true;
  if (req.access === "read") readWrite.disabled = true;
  const key = h("input", { type: "password", id: "consent-key", placeholder: "hsk_… or the admin key", autocomplete: "off",
    value: sessionStorage.getItem(KEY) || "" });
  const error = h("p", { class: "error", id: "consent-error" });
  const buttons = [];

  async function decide(approve) {
    error.textContent = "";
    buttons.forEach((b) => { b.disabled = true; });
    try {
      const body = { request_id: requestId, approve };
      if (approve) {
        if (!req.bank_id) body.bank_id = bank.value.trim();
        body.access = readOnly.checked ? "read" : "read_write";
      }
      const answer = await post("/v1/oauth/consent/decide", body, approve ? key.value.trim() : null);
      view().replaceChildren(h("div", { class: "panel login" }, h("p", {}, approve ? "Approved. Returning to the application…" : "Refused. Returning to the application…")));
      location.assign(answer.redirect_to);
    } catch (e) {
      error.textContent = e.message;
      buttons.forEach((b) => { b.disabled = false; });
    }
  }

  const approve = h("button", { class: "primary", type: "submit", id: "approve" }, "Approve");
  const refuse = h("button", { type: "button", id: "refuse", onclick: () => decide(false) }, "Refuse");
  buttons.push(approve, refuse);
  view().replaceChildren(h("form", { class: "panel login", onsubmit: (e) => { e.preventDefault(); decide(true); } },
    h("h1", {}, "Connect an application"),
    h("p", {}, h("b", { id: "consent-app" }, name), " asks to use a Hindsight memory bank."),
    h("table", {}, h("tbody", {},
      h("tr", {}, h("th", {}, "Application"), h("td", {}, name, req.client_name ? h("div", { class: "meta" }, req.client_id) : null,
        req.client_uri ? h("div", { class: "meta" }, req.client_uri) : null)),
      h("tr", {}, h("th", {}, "Returns to"), h("td", { id: "consent-return" }, req.redirect_host)),
      h("tr", {}, h("th", {}, "Bank"), h("td", {}, bank)),
      h("tr", {}, h("th", {}, "Access"), h("td", {},
        h("label", { class: "inline" }, readWrite, "read and write (recall, retain, mental models)"),
        h("label", { class: "inline" }, readOnly, "read only (recall, reflect)"))))),
    h("p", { class: "muted" }, "The application gets a token for this bank only, never wider than your key. ",
      "You can disconnect it any time in the console (the bank's Connected apps)."),
    h("label", {}, "Your API key", key),
    error,
    h("p", { class: "row" }, approve, refuse)));
  (req.bank_id ? key : bank).focus();
}

window.addEventListener("DOMContentLoaded", show);
