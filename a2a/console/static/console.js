"use strict";
// The console's state and what the other scripts share: elements, the API, formatting and
// rendering once per frame. Everything shown is set as text (textContent, never innerHTML):
// agent output is untrusted.

const S = {
  user: "",
  sessions: new Map(),   // id -> session row
  selected: null,        // the session shown
  calls: new Map(),      // requestId -> ended call, in arrival order
  running: new Map(),    // requestId -> call still running (t0: when it started, on this clock)
  agents: [],            // registry rows, one per instance
  policies: new Map(),   // local agent -> {allowShared, remotes}
  traces: false,         // calls link to Jaeger
  filter: { agent: "", user: "", error: "" },
  windowMin: 5,          // minutes the per-agent figures cover
  conversation: null,    // the conversation whose calls the tree shows
  tree: null,            // the call tree shown (a correlation id), or null: all of the conversation
  call: null,            // the call whose details are shown
  notice: null,          // {session, text}: what a control did
  keptDraft: null,       // {session, text}: the draft take over set aside, to start from
};
const MAX_CALLS = 2000;
const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const r = await fetch(path, init);
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) {
    const err = data && data.error;
    throw new Error(err ? err.code + ": " + err.message : r.status + " " + r.statusText);
  }
  return data;
}

function pad(n, width) { return String(n).padStart(width || 2, "0"); }
function clock(ms) {
  const d = new Date(ms);
  return pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
}
function stamp(ms) {  // the full date and time, for a tooltip
  const d = new Date(ms);
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + clock(ms) +
    "." + pad(d.getMilliseconds(), 3);
}
function duration(ms) {
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  const s = Math.floor(ms / 1000);
  return Math.floor(s / 60) + " min " + pad(s % 60) + " s";
}
function short(id) { return id && id.length > 14 ? id.slice(0, 6) + "\u2026" + id.slice(-6) : id || ""; }
function treeOf(call) { return call.correlationId || call.requestId; }
function elapsed(call) { return call.outcome === "running" ? Date.now() - call.t0 : call.durationMs; }
function failed(call) { return call.outcome !== "ok" && call.outcome !== "running"; }
function safeUrl(url) { return typeof url === "string" && /^https?:\/\//i.test(url) ? url : null; }

function traceLink(call, focusable) {
  const url = safeUrl(call.traceUrl);
  if (!url) return null;
  const a = el("a", "trace", "trace");
  a.href = url; a.target = "_blank"; a.rel = "noopener noreferrer";
  a.title = "this call's trace in Jaeger (opens a new tab)";
  a.setAttribute("aria-label", "trace of " + call.origin + " to " + call.target + "." + call.action + " in Jaeger");
  if (!focusable) a.tabIndex = -1;
  return a;
}

// Rendering: parts marked dirty are drawn once, at the next frame.
const RENDER = {};
const dirty = new Set();
let frame = 0;
function schedule(...parts) {
  for (const p of parts) dirty.add(p);
  if (!frame) frame = requestAnimationFrame(flush);
}
function flush() {
  frame = 0;
  const parts = [...dirty];
  dirty.clear();
  for (const p of parts) RENDER[p]();
}

// Redraw a container without losing the keyboard's place: the element with the focus is
// found again by its data-key.
function redraw(box, build) {
  const active = document.activeElement;
  const key = active && box.contains(active) ? active.dataset.key : undefined;
  box.replaceChildren(...build());
  if (key !== undefined) {
    const again = [...box.querySelectorAll("[data-key]")].find((e) => e.dataset.key === key);
    if (again) again.focus({ preventScroll: true });
  }
  rove(box);
}

// A list is one stop of the Tab key; the arrow keys, Home and End move within it.
function rove(box) {
  const items = [...box.querySelectorAll("button.row")];
  if (!items.length) return;
  const current = items.find((b) => b === document.activeElement) ||
    items.find((b) => b.getAttribute("aria-current") === "true") || items[0];
  for (const b of items) b.tabIndex = b === current ? 0 : -1;
}
function roving(box) {
  box.addEventListener("keydown", (ev) => {
    const items = [...box.querySelectorAll("button.row")];
    const at = items.indexOf(document.activeElement);
    if (at < 0) return;
    const to = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: items.length - 1 }[ev.key];
    if (to === undefined || to < 0 || to >= items.length) return;
    ev.preventDefault();
    for (const b of items) b.tabIndex = -1;
    items[to].tabIndex = 0;
    items[to].focus();
  });
}
