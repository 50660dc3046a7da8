"use strict";
// Sessions: the form that starts one, the list, and the session shown with its controls.

const WHO = { local_agent: ["L", "Local Agent"], remote_agent: ["R", "Remote Agent"], user: ["You", "You"] };
const LABEL = {
  auto_sent: "auto-sent", user_approved: "user-approved", user_edited: "user-edited", user_written: "user-written",
};
const ENDED = ["completed", "error", "stopped"];
let remoteChosen = false;  // the person picked the remote agent: keep it

function keep(s) {  // a reply or an event may arrive after a newer one: keep the newest version
  const old = S.sessions.get(s.id);
  if (!old || old.version <= s.version) S.sessions.set(s.id, s);
}

function remembered(key) {
  try { return localStorage.getItem("a2a-console." + key) || ""; } catch (e) { return ""; }
}
function remember(key, value) {
  try { localStorage.setItem("a2a-console." + key, value); } catch (e) { /* storage off: no memory */ }
}

// The pickers default to two different agents: a local program as the local agent, and a
// remote agent its policy lets it send to.
function fillPickers() {
  const names = [...new Set(S.agents.map((a) => a.name))].sort();
  const locals = [...new Set(S.agents.filter((a) => a.local).map((a) => a.name))].sort();
  const local = $("new-local"), remote = $("new-remote");
  const pick = (sel, choices, fallback) => {
    const was = sel.value;
    sel.replaceChildren(...names.map((n) => { const o = el("option", "", n); o.value = n; return o; }));
    sel.value = choices.find((n) => names.includes(n)) || fallback || "";
    return was !== sel.value;
  };
  const changed = pick(local, [local.value, remembered("local"), ...locals], names[0]);
  const policy = S.policies.get(local.value);
  const allowed = policy && policy.allowShared ? policy.remotes : [];
  const others = names.filter((n) => n !== local.value);
  const fits = (n) => others.includes(n) && (!policy || allowed.includes(n));
  pick(remote, [
    ...(remoteChosen ? [remote.value] : []),
    ...[remote.value, remembered("remote")].filter(fits),
    ...allowed,
    ...others.filter((n) => !locals.includes(n)),
  ].filter((n) => others.includes(n)), others[0]);
  $("start").disabled = names.length < 2;
  if (names.length < 2) $("allowed").textContent = "A session needs two agents; they appear here when they run.";
  else showAllowed();
  if (changed || !S.policies.has(local.value)) loadPolicy(local.value);
}

async function loadPolicy(local) {
  if (!local || S.policies.has(local)) return;
  try {
    S.policies.set(local, await api("/api/policies/" + encodeURIComponent(local)));
    fillPickers();
  } catch (e) { $("allowed").textContent = e.message; }
}

function showAllowed() {
  const local = $("new-local").value, p = S.policies.get(local);
  const box = $("allowed");
  if (!p) { box.textContent = ""; return; }
  box.textContent = p.allowShared && p.remotes.length
    ? local + " may send to: " + p.remotes.join(", ")
    : local + " may not send to other agents yet (a2a session policy " + local + " --allow NAME).";
}

async function startSession(ev) {
  ev.preventDefault();
  const err = $("start-error");
  err.textContent = "";
  const local = $("new-local").value, remote = $("new-remote").value;
  if (!local || !remote) { err.textContent = "Pick a local and a remote agent."; return; }
  if (local === remote) { err.textContent = "Pick two different agents: an agent cannot hold a session with itself."; return; }
  const maxTurns = Number($("new-max-turns").value);
  if (!Number.isInteger(maxTurns) || maxTurns < 1) { err.textContent = "Max turns is a whole number, 1 or more."; return; }
  $("start").disabled = true;
  try {
    const s = await api("/api/sessions", {
      local, remote, objective: $("new-objective").value, mode: $("new-mode").value, maxTurns,
    });
    remember("local", local); remember("remote", remote);
    keep(s); select(s.id);
  } catch (e) { err.textContent = e.message; }
  finally { $("start").disabled = false; }
}

function select(id) {
  if (S.selected !== id) { S.notice = null; S.keptDraft = null; $("control-error").textContent = ""; }
  S.selected = id;
  S.conversation = id; S.tree = null; S.call = null;
  schedule("sessions", "session", "tree", "conversations");
}

RENDER.sessions = () => {
  const all = [...S.sessions.values()].sort((a, b) => b.startedAt - a.startedAt);
  redraw($("sessions"), () => {
    if (!all.length) return [el("p", "empty", "No sessions yet.")];
    return all.map((s) => {
      const b = el("button", "row item");
      b.type = "button"; b.dataset.key = s.id; b.dataset.id = s.id;
      if (s.id === S.selected) b.setAttribute("aria-current", "true");
      b.append(el("span", "title", s.objective.slice(0, 100)));
      const line = el("span", "who", s.profileId + " \u2192 " + s.remote + " \u00b7 " + s.mode + " \u00b7 " +
        clock(s.startedAt * 1000) + " ");
      line.append(el("span", "badge " + s.state, s.state));
      b.append(line);
      b.onclick = () => select(s.id);
      return b;
    });
  });
};

RENDER.session = () => {
  const s = S.sessions.get(S.selected);
  for (const id of ["pause", "resume", "stop", "takeover"]) $(id).disabled = !s;
  $("session").classList.toggle("none", !s);
  if (!s) return;
  $("objective").textContent = s.objective; $("objective").className = "";
  $("session-state").textContent = s.state; $("session-state").className = "badge " + s.state;
  $("meta").textContent = s.profileId + " \u2192 " + s.remote + " \u00b7 " + s.mode + " \u00b7 " +
    s.turns.filter((t) => t.role !== "remote_agent").length + "/" + s.limits.maxTurns + " turns \u00b7 " +
    s.tokensUsed + " tokens \u00b7 started " + clock(s.startedAt * 1000) +
    (s.lastError ? " \u00b7 last error: " + s.lastError : "") +
    (s.adoptions.length ? " \u00b7 adopted by " + s.adoptions[s.adoptions.length - 1].by : "");
  const banner = $("banner");
  banner.hidden = !s.ending;
  if (s.ending) {
    banner.className = s.ending.kind;
    banner.textContent = (s.ending.kind === "limit" ? "Limit reached (" + s.ending.limit + "): " : "") + s.ending.message;
  }
  const notice = S.notice && S.notice.session === s.id ? S.notice.text : null;
  $("notice").hidden = !notice;
  $("notice-text").textContent = notice || "";
  const turns = $("turns");
  const atEnd = turns.scrollTop + turns.clientHeight >= turns.scrollHeight - 8;
  turns.replaceChildren(...s.turns.map((t) => {
    const row = el("div", "turn " + t.role);
    const [initials, name] = WHO[t.role] || ["?", t.role];
    row.append(el("div", "avatar", initials));
    const body = el("div", "body");
    const who = el("div", "who", name + " \u00b7 " + clock(t.at * 1000));
    if (t.sentBy) who.append(el("span", "label " + t.sentBy, LABEL[t.sentBy] || t.sentBy));
    if (t.resent) who.append(el("span", "label resent", "sent again"));
    body.append(who, el("div", "text", t.text));
    row.append(body);
    return row;
  }));
  if (atEnd) turns.scrollTop = turns.scrollHeight;
  const waiting = s.state === "ready_to_send" && !!s.review;
  $("draftbox").hidden = !waiting;
  if (waiting) {
    $("review").textContent = s.review;
    const draft = $("draft");
    if (draft.dataset.for !== s.id + ":" + s.version) {
      const editing = document.activeElement === draft && draft.dataset.session === s.id;
      const kept = S.keptDraft && S.keptDraft.session === s.id ? S.keptDraft.text : "";
      if (!editing) draft.value = s.draft || kept;
      draft.dataset.for = s.id + ":" + s.version; draft.dataset.session = s.id;
    }
    $("approve").disabled = s.draft === null || s.draft === undefined;
    approveLabel();
  }
  $("pause").disabled = ENDED.includes(s.state) || s.state === "paused";
  $("resume").disabled = s.state !== "paused";
  $("stop").disabled = ENDED.includes(s.state);
  $("takeover").disabled = ENDED.includes(s.state);
  $("takeover").textContent = s.takeover ? "Hand back" : "Take over";
};

function approveLabel() {
  const s = S.sessions.get(S.selected);
  const edited = s && s.draft !== null && $("draft").value !== s.draft;
  $("approve").textContent = edited ? "Send my edit" : "Approve and send";
}

async function control(action, body) {
  $("control-error").textContent = "";
  const id = S.selected;
  try {
    const s = await api("/api/sessions/" + encodeURIComponent(id) + "/" + action, body || {});
    if (s.notice) S.notice = { session: s.id, text: s.notice };
    else if (action !== "takeover") S.notice = null;
    if (action === "takeover" && s.setAside) S.keptDraft = { session: s.id, text: s.setAside };
    if (["approve", "write", "handback"].includes(action)) S.keptDraft = null;
    keep(s);
    if (action === "takeover") $("draft").dataset.for = "";
    schedule("session", "sessions");
    if (action === "takeover" && s.state === "ready_to_send") requestAnimationFrame(() => $("draft").focus());
  } catch (e) { $("control-error").textContent = e.message; }
}

function wireSession() {
  $("new-session").addEventListener("submit", startSession);
  $("new-local").addEventListener("change", () => { remoteChosen = false; fillPickers(); });
  $("new-remote").addEventListener("change", () => { remoteChosen = true; });
  $("pause").onclick = () => control("pause");
  $("resume").onclick = () => control("resume");
  $("stop").onclick = () => control("stop");
  $("takeover").onclick = () => control(S.sessions.get(S.selected).takeover ? "handback" : "takeover");
  $("approve").onclick = () => {
    const s = S.sessions.get(S.selected);
    control("approve", $("draft").value !== s.draft ? { text: $("draft").value } : {});
  };
  $("write").onclick = () => control("write", { text: $("draft").value });
  $("draft").addEventListener("input", approveLabel);
  $("notice-close").onclick = () => { S.notice = null; schedule("session"); };
  roving($("sessions"));
}
