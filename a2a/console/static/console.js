"use strict";
const S = { sessions: new Map(), selected: null, calls: [], agents: [] };
const $ = (id) => document.getElementById(id);
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text; return e; }
async function post(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
                                body: JSON.stringify(body || {}) });
  const data = await r.json();
  if (!r.ok) throw new Error((data.error && (data.error.code + ": " + data.error.message)) || r.statusText);
  return data;
}
function keep(s) {  // a reply or an event may arrive after a newer one: keep the newest version
  const old = S.sessions.get(s.id);
  if (!old || old.version <= s.version) S.sessions.set(s.id, s);
}
const WHO = { local_agent: ["L", "Local Agent"], remote_agent: ["R", "Remote Agent"], user: ["You", "You"] };
const LABEL = { auto_sent: "auto-sent", user_approved: "user-approved", user_written: "user-written" };
function renderSessions() {
  const box = $("sessions"); box.replaceChildren();
  const all = [...S.sessions.values()].sort((a, b) => b.startedAt - a.startedAt);
  if (!all.length) box.append(el("p", "empty", "none yet"));
  for (const s of all) {
    const item = el("div", "item" + (s.id === S.selected ? " selected" : ""));
    item.dataset.id = s.id;
    item.append(el("div", "", s.objective.slice(0, 80)));
    const line = el("div", "who", s.profileId + " \u2192 " + s.remote + " \u00b7 " + s.mode + " ");
    line.append(el("span", "badge " + s.state, s.state)); item.append(line);
    item.onclick = () => { S.selected = s.id; $("conversation").value = s.id;
      renderSessions(); renderSession(); renderCalls(); };
    box.append(item);
  }
}
function renderSession() {
  const s = S.sessions.get(S.selected);
  for (const id of ["pause", "resume", "stop", "takeover"]) $(id).disabled = !s;
  if (!s) return;
  $("objective").textContent = s.objective; $("objective").className = "";
  $("session-state").textContent = s.state; $("session-state").className = "badge " + s.state;
  $("meta").textContent = s.profileId + " \u2192 " + s.remote + " \u00b7 " + s.mode + " \u00b7 " +
    (s.turns.filter(t => t.role !== "remote_agent").length) + "/" + s.limits.maxTurns + " turns \u00b7 " +
    s.tokensUsed + " tokens" + (s.lastError ? " \u00b7 last error: " + s.lastError : "") +
    (s.adoptions.length ? " \u00b7 adopted by " + s.adoptions[s.adoptions.length - 1].by : "");
  const banner = $("banner");
  if (s.ending) { banner.style.display = "block"; banner.className = s.ending.kind;
    banner.textContent = (s.ending.kind === "limit" ? "Limit reached (" + s.ending.limit + "): " : "") + s.ending.message;
  } else { banner.style.display = "none"; }
  const turns = $("turns"); turns.replaceChildren();
  for (const t of s.turns) {
    const row = el("div", "turn " + t.role); const [short, name] = WHO[t.role] || ["?", t.role];
    row.append(el("div", "avatar", short)); const body = el("div");
    const who = el("div", "who", name); if (t.sentBy) who.append(el("span", "label " + t.sentBy, LABEL[t.sentBy]));
    body.append(who, el("div", "text", t.text)); row.append(body); turns.append(row);
  }
  turns.scrollTop = turns.scrollHeight;
  const waiting = s.state === "ready_to_send" && s.review;
  $("draftbox").style.display = waiting ? "block" : "none";
  if (waiting) {
    $("review").textContent = s.review;
    if ($("draft").dataset.for !== s.id + ":" + s.version) {
      const editing = document.activeElement === $("draft") && $("draft").dataset.session === s.id;
      if (!editing) $("draft").value = s.draft || "";
      $("draft").dataset.for = s.id + ":" + s.version; $("draft").dataset.session = s.id;
    }
    $("approve").disabled = s.draft === null || s.draft === undefined;
  }
  const ended = ["completed", "error", "stopped"].includes(s.state);
  $("pause").disabled = ended || s.state === "paused"; $("resume").disabled = s.state !== "paused";
  $("stop").disabled = ended; $("takeover").disabled = ended;
  $("takeover").textContent = s.takeover ? "Hand back" : "Take over";
}
function renderAgents() {
  const body = $("agents").querySelector("tbody"); body.replaceChildren();
  for (const a of S.agents) {
    const tr = el("tr"); tr.dataset.agent = a.name;
    const name = el("td", "", a.name); name.append(el("div", "who", a.instance)); tr.append(name);
    for (const v of [a.status, a.load + "/" + a.capacity, a.trust.toFixed(2), a.capabilities.join(", ")])
      tr.append(el("td", "", String(v)));
    body.append(tr);
  }
  const names = [...new Set(S.agents.map(a => a.name))];
  for (const id of ["new-local", "new-remote"]) {
    const sel = $(id), keep = sel.value; sel.replaceChildren();
    for (const n of names) { const o = el("option", "", n); o.value = n; sel.append(o); }
    if (names.includes(keep)) sel.value = keep;
  }
}
function renderCalls() {
  const box = $("calls"); box.replaceChildren(); const conv = $("conversation").value.trim();
  $("calls-of").textContent = conv ? "in " + conv : "(all conversations)";
  const rows = S.calls.filter(c => !conv || c.conversationId === conv).slice(-200);
  const byId = new Map(rows.map(r => [r.requestId, r])); const kids = new Map();
  for (const r of rows) { const p = byId.has(r.parentId) ? r.parentId : null;
    if (!kids.has(p)) kids.set(p, []); kids.get(p).push(r); }
  const walk = (p, depth) => { for (const r of (kids.get(p) || []).sort((a, b) => a.startedAt - b.startedAt)) {
      const line = el("div", "call " + r.outcome, "\u00a0\u00a0".repeat(depth) + r.origin + " \u2192 " + r.target +
        "." + r.action + "  " + r.outcome + (r.errorCode ? " " + r.errorCode : "") + "  ");
      line.append(el("span", "ms", Math.round(r.durationMs) + " ms" + (r.tokens ? ", " + r.tokens + " tokens" : "")));
      box.append(line); walk(r.requestId, depth + 1); } };
  walk(null, 0);
  if (!rows.length) box.append(el("p", "empty", "no calls yet"));
}
async function control(action, body) {
  $("control-error").textContent = "";
  try { const s = await post("/api/sessions/" + S.selected + "/" + action, body); keep(s); renderSession(); }
  catch (e) { $("control-error").textContent = e.message; }
}
$("conversation").oninput = () => renderCalls();
$("pause").onclick = () => control("pause"); $("resume").onclick = () => control("resume");
$("stop").onclick = () => control("stop");
$("takeover").onclick = () => control(S.sessions.get(S.selected).takeover ? "handback" : "takeover");
$("approve").onclick = () => { const s = S.sessions.get(S.selected);
  control("approve", $("draft").value !== s.draft ? { text: $("draft").value } : {}); };
$("write").onclick = () => control("write", { text: $("draft").value });
$("start").onclick = async () => {
  $("start-error").textContent = "";
  try { const s = await post("/api/sessions", { local: $("new-local").value, remote: $("new-remote").value,
      objective: $("new-objective").value, mode: $("new-mode").value, maxTurns: Number($("new-max-turns").value) });
    keep(s); S.selected = s.id; $("conversation").value = s.id;
    renderSessions(); renderSession(); renderCalls(); }
  catch (e) { $("start-error").textContent = e.message; }
};
async function load() {
  const r = await fetch("/api/state"); const st = await r.json();
  $("user").textContent = st.user; S.agents = st.agents; S.calls = st.calls;
  for (const s of st.sessions) keep(s);
  renderAgents(); renderSessions(); renderSession(); renderCalls();
  const es = new EventSource("/api/events");
  es.onopen = () => { $("conn").textContent = "live"; };
  es.onerror = () => { $("conn").textContent = "reconnecting"; };
  es.addEventListener("session", (m) => { const s = JSON.parse(m.data); keep(s);
    renderSessions(); if (s.id === S.selected) renderSession(); });
  es.addEventListener("call", (m) => { S.calls.push(JSON.parse(m.data)); if (S.calls.length > 2000) S.calls.shift(); renderCalls(); });
  es.addEventListener("agents", (m) => { S.agents = JSON.parse(m.data); renderAgents(); });
}
load();
