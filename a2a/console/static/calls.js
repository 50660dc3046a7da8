"use strict";
// Calls: live as they run, the conversations they belong to, call trees, filters, and the
// per-agent figures.

const SHOWN = 150;  // rows of a list

// A running call's start on this page's clock: from when it was announced (its duration then),
// or, for one listed by the server (``now``: the server's clock), from its start.
function addCall(c, serverNow) {
  const id = c.requestId;
  if (c.outcome === "running") {
    if (S.calls.has(id)) return;  // its end came first
    const had = S.running.get(id);
    c.t0 = had ? had.t0 : serverNow ? Date.now() - Math.max(c.durationMs, serverNow - c.startedAt)
      : Date.now() - c.durationMs;
    S.running.set(id, c);
  } else {
    S.running.delete(id);
    S.calls.delete(id);  // the caller's and the callee's record of one call: the later one
    S.calls.set(id, c);
    while (S.calls.size > MAX_CALLS) S.calls.delete(S.calls.keys().next().value);
  }
}
function everyCall() { return [...S.running.values(), ...S.calls.values()]; }
function newestFirst(calls) { return calls.sort((a, b) => b.startedAt - a.startedAt); }

function passes(c, withError) {
  const f = S.filter;
  if (f.agent && c.origin !== f.agent && c.target !== f.agent) return false;
  if (f.user && (c.userId || "") !== f.user) return false;
  if (withError !== false && f.error) {
    if (f.error === "*") return failed(c);
    return c.errorCode === f.error;
  }
  return true;
}

function outcomeBadge(c) {
  if (c.outcome === "running") return el("span", "badge running", "running");
  if (c.outcome === "ok") return el("span", "badge ok", "ok");
  return el("span", "badge error", c.errorCode || c.outcome);
}
function durationCell(c) {
  const d = el("span", "ms", duration(elapsed(c)));
  if (c.outcome === "running") d.dataset.t0 = String(c.t0);
  return d;
}
function callSummary(c) {
  const line = el("span", "what");
  line.append(el("span", "agent", c.origin), " \u2192 ", el("span", "agent", c.target), "." + c.action);
  return line;
}

function pickCall(c) {
  S.call = c.requestId; S.tree = treeOf(c); S.conversation = c.conversationId;
  schedule("calls", "tree", "conversations");
}

RENDER.calls = () => {
  const shown = newestFirst(everyCall().filter((c) => passes(c))).slice(0, SHOWN);
  $("calls-count").textContent = shown.length ? "(" + shown.length + (shown.length === SHOWN ? "+" : "") + ")" : "";
  redraw($("calls"), () => {
    if (!shown.length) return [el("li", "empty", S.calls.size ? "No calls match the filters." : "No calls yet.")];
    return shown.map((c) => {
      const li = el("li", "call " + (failed(c) ? "failed" : c.outcome));
      li.dataset.id = c.requestId;
      const b = el("button", "row");
      b.type = "button"; b.dataset.key = c.requestId;
      if (c.requestId === S.call) b.setAttribute("aria-current", "true");
      const t = el("time", "at", clock(c.startedAt));
      t.title = stamp(c.startedAt);
      b.append(t, callSummary(c), el("span", "user", c.userId || ""), outcomeBadge(c), durationCell(c));
      b.onclick = () => pickCall(c);
      li.append(b);
      const link = traceLink(c, false);
      if (link) li.append(link);
      return li;
    });
  });
};

RENDER.conversations = () => {
  const groups = new Map();
  for (const c of everyCall()) {
    if (!passes(c)) continue;
    let g = groups.get(c.conversationId);
    if (!g) groups.set(c.conversationId, g = { id: c.conversationId, calls: 0, running: 0, errors: 0, last: 0,
      agents: new Set(), user: c.userId, first: c });
    if (c.startedAt < g.first.startedAt) g.first = c;
    g.calls += 1; g.running += c.outcome === "running" ? 1 : 0; g.errors += failed(c) ? 1 : 0;
    g.last = Math.max(g.last, c.startedAt + (c.outcome === "running" ? 0 : c.durationMs));
    g.agents.add(c.target);
  }
  const shown = [...groups.values()].sort((a, b) => b.last - a.last).slice(0, SHOWN);
  redraw($("conversations"), () => {
    if (!shown.length) return [el("li", "empty", "No conversations yet.")];
    return shown.map((g) => {
      const li = el("li", "conversation");
      li.dataset.id = g.id;
      const b = el("button", "row");
      b.type = "button"; b.dataset.key = g.id;
      if (g.id === S.conversation) b.setAttribute("aria-current", "true");
      const session = S.sessions.get(g.id);
      const first = g.first.origin + " \u2192 " + g.first.target + "." + g.first.action;
      b.append(el("span", "title", session ? session.objective.slice(0, 80) : first));
      b.title = "conversation " + g.id;
      const t = el("time", "at", clock(g.last));
      t.title = stamp(g.last);
      const meta = el("span", "who", g.calls + " call" + (g.calls === 1 ? "" : "s") +
        (g.running ? " \u00b7 " + g.running + " running" : "") + (g.errors ? " \u00b7 " + g.errors + " failed" : "") +
        " \u00b7 " + [...g.agents].slice(0, 4).join(", ") + (g.user ? " \u00b7 " + g.user : "") + " \u00b7 ");
      meta.append(t);
      b.append(meta);
      b.onclick = () => { S.conversation = g.id; S.tree = null; S.call = null; schedule("conversations", "tree", "calls"); };
      li.append(b);
      return li;
    });
  });
};

// Trees by parentId -> requestId within a correlation id; the trees of the conversation shown,
// or only the one picked.
RENDER.tree = () => {
  const calls = everyCall().filter((c) => S.tree ? treeOf(c) === S.tree : c.conversationId === S.conversation);
  const title = $("tree-of");
  title.textContent = S.tree ? "of " + short(S.tree) : S.conversation ? "in conversation " + short(S.conversation) : "";
  $("tree-all").hidden = !S.tree || !S.conversation;
  const trees = new Map();
  for (const c of calls) {
    if (!trees.has(treeOf(c))) trees.set(treeOf(c), []);
    trees.get(treeOf(c)).push(c);
  }
  redraw($("tree"), () => {
    if (!S.conversation && !S.tree) return [el("p", "empty", "Pick a call or a conversation to see its calls.")];
    if (!calls.length) return [el("p", "empty", "No calls in this conversation yet.")];
    const roots = [...trees.values()].map((members) => {
      const ids = new Set(members.map((c) => c.requestId));
      const kids = new Map();
      for (const c of members) {
        const parent = ids.has(c.parentId) ? c.parentId : null;
        if (!kids.has(parent)) kids.set(parent, []);
        kids.get(parent).push(c);
      }
      return { start: Math.min(...members.map((c) => c.startedAt)), kids };
    }).sort((a, b) => a.start - b.start);
    const list = el("ul", "tree");
    for (const t of roots) for (const c of byStart(t.kids.get(null))) list.append(node(c, t.kids));
    return [list];
  });
  RENDER.detail();
};
function byStart(list) { return (list || []).sort((a, b) => a.startedAt - b.startedAt); }
function node(c, kids) {
  const li = el("li", "node " + (failed(c) ? "failed" : c.outcome));
  li.dataset.id = c.requestId;
  const line = el("div", "line");
  const b = el("button", "row");
  b.type = "button"; b.dataset.key = c.requestId;
  if (c.requestId === S.call) b.setAttribute("aria-current", "true");
  const t = el("time", "at", clock(c.startedAt));
  t.title = stamp(c.startedAt);
  b.append(t, callSummary(c), outcomeBadge(c), durationCell(c));
  b.onclick = () => { S.call = c.requestId; schedule("tree", "calls"); };
  line.append(b);
  const link = traceLink(c, true);
  if (link) line.append(link);
  li.append(line);
  const children = byStart(kids.get(c.requestId));
  if (children.length) {
    const ul = el("ul");
    for (const k of children) ul.append(node(k, kids));
    li.append(ul);
  }
  return li;
}

RENDER.detail = () => {
  const c = S.running.get(S.call) || S.calls.get(S.call);
  const box = $("detail");
  box.hidden = !c;
  if (!c) return;
  const dl = el("dl");
  const add = (k, v) => { if (v !== null && v !== undefined && v !== "") dl.append(el("dt", "", k), el("dd", "", v)); };
  add("call", c.origin + " \u2192 " + c.target + "." + c.action);
  add("outcome", c.outcome + (c.errorCode ? " " + c.errorCode : ""));
  add("error", c.errorMessage ? c.errorMessage + (c.errorAgent ? " (" + c.errorAgent + ")" : "") : null);
  add("started", stamp(c.startedAt));
  const d = el("dd", "", duration(elapsed(c)));
  if (c.outcome === "running") d.dataset.t0 = String(c.t0);
  dl.append(el("dt", "", c.outcome === "running" ? "running for" : "took"), d);
  add("user", c.userId);
  add("objective", c.objective);
  add("tokens", c.tokens || null);
  add("tools", (c.tools || []).join(", "));
  add("depth / hop", c.depth + " / " + c.hop);
  add("request", c.requestId);
  add("parent", c.parentId);
  add("call tree", treeOf(c));
  add("conversation", c.conversationId);
  add("instance", c.instance);
  const parts = [el("h3", "", "Call")];
  const link = traceLink(c, true);
  if (link) { link.textContent = "Open its trace in Jaeger"; parts.push(link); }
  else if (!S.traces) parts.push(el("p", "hint", "Traces: set A2A_JAEGER_URL to link calls to Jaeger."));
  box.replaceChildren(...parts, dl);
};

// Filters: the choices are those seen.
let filterChoices = "";
RENDER.filters = () => {
  const agents = new Set(S.agents.map((a) => a.name));
  const users = new Set(), codes = new Set();
  for (const c of everyCall()) {
    agents.add(c.origin); agents.add(c.target);
    if (c.userId) users.add(c.userId);
    if (c.errorCode) codes.add(c.errorCode);
  }
  for (const key of ["agent", "user", "error"]) if (S.filter[key] && S.filter[key] !== "*") {
    ({ agent: agents, user: users, error: codes })[key].add(S.filter[key]);  // a choice stays while chosen
  }
  $("filter-clear").disabled = !(S.filter.agent || S.filter.user || S.filter.error);
  const choices = JSON.stringify([[...agents].sort(), [...users].sort(), [...codes].sort()]);
  if (choices === filterChoices) return;  // unchanged: an open list is left alone
  filterChoices = choices;
  const fill = (key, values, firsts) => {
    const sel = $("filter-" + key);
    sel.replaceChildren(...[...firsts, ...[...values].sort().map((v) => [v, v])].map(([v, text]) => {
      const o = el("option", "", text); o.value = v; return o;
    }));
    sel.value = S.filter[key];
  };
  fill("agent", agents, [["", "all agents"]]);
  fill("user", users, [["", "all users"]]);
  fill("error", codes, [["", "any outcome"], ["*", "any failure"]]);
};

// Per agent: the calls it handled within the window, their rate, p50/p99 duration and the
// failures by code, the calls running now, and its instances' load from the registry.
const openAgents = new Set();  // agents whose instances are shown
function percentile(sorted, p) { return sorted.length ? sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] : null; }
RENDER.agents = () => {
  const since = Date.now() - S.windowMin * 60000;
  const stats = new Map();
  const of = (name) => {
    if (!stats.has(name)) stats.set(name, { name, instances: [], durations: [], errors: new Map(), running: 0 });
    return stats.get(name);
  };
  for (const a of S.agents) of(a.name).instances.push(a);
  for (const c of everyCall()) {
    if (!passes(c, false)) continue;
    if (c.outcome === "running") { of(c.target).running += 1; continue; }
    if (c.startedAt + c.durationMs < since) continue;
    const st = of(c.target);
    st.durations.push(c.durationMs);
    if (failed(c)) { const code = c.errorCode || c.outcome; st.errors.set(code, (st.errors.get(code) || 0) + 1); }
  }
  const rows = [...stats.values()].filter((st) => !S.filter.agent || st.name === S.filter.agent)
    .sort((a, b) => a.name.localeCompare(b.name));
  const body = $("agents").querySelector("tbody");
  redraw(body, () => rows.map((st) => {
    const tr = el("tr"); tr.dataset.agent = st.name;
    const sorted = st.durations.sort((a, b) => a - b);
    const up = st.instances.filter((i) => i.status === "available").length;
    const load = st.instances.reduce((n, i) => n + i.load, 0), cap = st.instances.reduce((n, i) => n + i.capacity, 0);
    const name = el("td", "name");
    name.dataset.label = "agent";
    const b = el("button", "link", st.name);
    b.type = "button"; b.dataset.key = "agent:" + st.name;
    b.title = "show only the calls from or to " + st.name;
    b.onclick = () => setFilter("agent", S.filter.agent === st.name ? "" : st.name);
    name.append(b);
    if (st.instances.length) {
      const det = el("details");
      det.open = openAgents.has(st.name);
      det.addEventListener("toggle", () => { if (det.open) openAgents.add(st.name); else openAgents.delete(st.name); });
      const summary = el("summary", "who", up + "/" + st.instances.length + " up");
      summary.dataset.key = "instances:" + st.name;
      det.append(summary);
      const ul = el("ul", "instances");
      for (const i of st.instances) {
        ul.append(el("li", "", i.instance + " \u00b7 " + i.status + " \u00b7 " + i.load + "/" + i.capacity +
          " \u00b7 seen " + i.lastSeenSecondsAgo + " s ago" + (i.capabilities.length ? " \u00b7 " + i.capabilities.join(", ") : "")));
      }
      det.append(ul);
      name.append(det);
    } else {
      name.append(el("div", "who", "not in the registry"));
    }
    tr.append(name);
    const cell = (label, text, cls) => { const td = el("td", cls || "num", text); td.dataset.label = label; tr.append(td); };
    cell("load", st.instances.length ? load + "/" + cap : "\u2013");
    cell("calls/min", (sorted.length / S.windowMin).toFixed(sorted.length / S.windowMin < 10 ? 1 : 0));
    cell("p50", sorted.length ? duration(percentile(sorted, 0.5)) : "\u2013");
    cell("p99", sorted.length ? duration(percentile(sorted, 0.99)) : "\u2013");
    cell("running", String(st.running));
    cell("errors", [...st.errors].map(([code, n]) => code + " \u00d7" + n).join(", ") || "none",
      st.errors.size ? "errors" : "errors none");
    return tr;
  }));
  $("agents-empty").hidden = rows.length > 0;
};

function setFilter(key, value) {
  S.filter[key] = value;
  $("filter-" + key).value = value;
  schedule("filters", "calls", "conversations", "agents");
}

function tick() {  // the durations of the calls still running
  const now = Date.now();
  for (const e of document.querySelectorAll("[data-t0]")) e.textContent = duration(now - Number(e.dataset.t0));
}

function wireCalls() {
  for (const key of ["agent", "user", "error"]) $("filter-" + key).addEventListener("change", (ev) => setFilter(key, ev.target.value));
  $("filter-clear").onclick = () => { for (const key of ["agent", "user", "error"]) setFilter(key, ""); $("filter-agent").focus(); };
  $("window").addEventListener("change", (ev) => { S.windowMin = Number(ev.target.value) || 5; schedule("agents"); });
  $("tree-all").onclick = () => { S.tree = null; schedule("tree"); };
  for (const id of ["calls", "conversations", "tree"]) roving($(id));
  setInterval(tick, 250);
  setInterval(() => schedule("agents"), 5000);  // the window moves on
}
