"use strict";
// Durable tasks: the user's tasks that this console's runtime submitted, a form to submit one,
// one opened by id, and the task shown with its journal and its Cancel button. The list is
// read again every 2 s while a task of it has not ended (every 15 s otherwise), the task shown
// every second until it ends; nothing is read while the page is hidden.

const T = {
  enabled: null,     // null until the server said; false: durable tasks are off here
  rows: new Map(),   // id -> task row, newest first
  shown: null,       // the id of the task shown
  detail: null,      // the task shown, with its journal
  skew: 0,           // the server's clock minus this page's
  note: null,        // why the list holds only the tasks submitted or opened here
  listTimer: 0,
  detailTimer: 0,
};
const TASK_ID = /^[A-Za-z0-9_-]{1,64}$/;
const LIST_BUSY = 2000, LIST_IDLE = 15000, DETAIL_EVERY = 1000;

function serverNow() { return Date.now() + T.skew; }
function sinceSubmitted(t) { return (t.ended ? t.endedAt || t.submittedAt : serverNow()) - t.submittedAt; }
function attemptsText(t) {
  if (!t.attempts) return t.ended ? "never ran" : "waiting for an attempt";
  return "attempt " + t.attempts + (t.maxAttempts > 1 && t.attempts > 1 ? " of " + t.maxAttempts : "");
}
function taskBadge(t) {
  const b = el("span", "badge " + t.state, t.state);
  if (t.error) b.title = t.error.code + ": " + t.error.message;
  return b;
}
function taskDuration(t, tag) {  // ticks while the task runs (see tick in calls.js)
  const d = el(tag || "span", "ms", duration(sinceSubmitted(t)));
  if (!t.ended) d.dataset.t0 = String(t.submittedAt - T.skew);
  return d;
}

// A row never goes back: an older answer (a list read before a cancel) does not undo a newer one.
function keepTask(t) {
  const old = T.rows.get(t.id);
  if (old && old.ended && !t.ended) return;
  T.rows.set(t.id, Object.assign({}, old || {}, t));
}

async function loadTasks() {
  clearTimeout(T.listTimer);
  if (document.hidden) { T.listTimer = setTimeout(loadTasks, LIST_BUSY); return; }
  let data;
  try { data = await api("/api/tasks"); }
  catch (e) {
    $("tasks-note").hidden = false; $("tasks-note").textContent = "The tasks could not be read: " + e.message;
    T.listTimer = setTimeout(loadTasks, LIST_IDLE);
    return;
  }
  T.enabled = data.enabled;
  if (!data.enabled) { schedule("tasks"); return; }  // off for the runtime's life: not asked again
  T.skew = data.now - Date.now();
  T.note = data.note;
  const rows = new Map();
  for (const t of data.tasks) {
    const old = T.rows.get(t.id);
    rows.set(t.id, old && old.ended && !t.ended ? old : t);
  }
  for (const [id, t] of T.rows) if (!rows.has(id) && id === T.shown) rows.set(id, t);  // opened by id
  T.rows = rows;
  schedule("tasks");
  const busy = data.tasks.some((t) => !t.ended);
  T.listTimer = setTimeout(loadTasks, busy ? LIST_BUSY : LIST_IDLE);
}

async function openTask(id, focus) {
  const err = $("task-open-error");
  err.textContent = "";
  clearTimeout(T.detailTimer);
  try {
    const t = await api("/api/tasks/" + encodeURIComponent(id));
    showTask(t);
    if (focus) $("h-task").focus();
  } catch (e) {
    err.textContent = e.message;
    if (T.shown === id) T.detailTimer = setTimeout(loadTask, DETAIL_EVERY);
  }
}

function showTask(t) {
  if (T.shown !== t.id) $("task-cancel-error").textContent = "";
  T.shown = t.id; T.detail = t; T.skew = t.now - Date.now();
  keepTask(t);
  schedule("task", "tasks");
  clearTimeout(T.detailTimer);
  if (!t.ended) T.detailTimer = setTimeout(loadTask, DETAIL_EVERY);
}

async function loadTask() {
  clearTimeout(T.detailTimer);
  const id = T.shown;
  if (!id) return;
  if (document.hidden) { T.detailTimer = setTimeout(loadTask, DETAIL_EVERY); return; }
  try {
    const t = await api("/api/tasks/" + encodeURIComponent(id));
    if (T.shown === id) showTask(t);
  } catch (e) {
    if (T.shown !== id) return;
    $("task-cancel-error").textContent = "Could not read the task: " + e.message;
    T.detailTimer = setTimeout(loadTask, DETAIL_EVERY * 3);
  }
}

async function submitTask(ev) {
  ev.preventDefault();
  const err = $("task-error");
  err.textContent = ""; $("task-submitted").textContent = "";
  const agent = $("task-agent").value.trim(), action = $("task-action").value.trim();
  if (!agent) { err.textContent = "Name the agent that takes the task."; $("task-agent").focus(); return; }
  if (!action) { err.textContent = "Name the action to run."; $("task-action").focus(); return; }
  let params;
  try { params = JSON.parse($("task-params").value.trim() || "{}"); }
  catch (e) { err.textContent = "Parameters: this is not JSON (" + e.message + ")."; $("task-params").focus(); return; }
  if (params === null || typeof params !== "object" || Array.isArray(params)) {
    err.textContent = "Parameters must be a JSON object, like {\"text\": \"hello\"}."; $("task-params").focus(); return;
  }
  const body = { agent, action, params };
  const key = $("task-key").value.trim();
  if (key) body.key = key;
  const timeout = $("task-timeout").value.trim();
  if (timeout) {
    const seconds = Number(timeout);
    if (!Number.isFinite(seconds) || seconds <= 0) {
      err.textContent = "The timeout is a number of seconds above 0."; $("task-timeout").focus(); return;
    }
    body.timeout = seconds;
  }
  $("task-submit").disabled = true;
  try {
    const t = await api("/api/tasks", body);
    remember("task-agent", agent); remember("task-action", action);
    $("task-submitted").textContent = t.created ? "" : "This key names a task submitted before: here it is.";
    T.rows = new Map([[t.id, t], ...[...T.rows].filter(([id]) => id !== t.id)]);
    await openTask(t.id);
    loadTasks();
  } catch (e) { err.textContent = e.message; }
  finally { $("task-submit").disabled = false; }
}

async function openById(ev) {
  ev.preventDefault();
  const id = $("task-id").value.trim();
  if (!TASK_ID.test(id)) {
    $("task-open-error").textContent = "A task id has 1 to 64 letters, digits, '_' or '-'.";
    $("task-id").focus();
    return;
  }
  await openTask(id, true);
}

async function cancelTask() {
  const id = T.shown, err = $("task-cancel-error");
  err.textContent = "";
  $("task-cancel").disabled = true;
  try {
    const t = await api("/api/tasks/" + encodeURIComponent(id) + "/cancel", {});
    if (T.shown === id) showTask(t); else keepTask(t);
    loadTasks();
  } catch (e) { err.textContent = e.message; $("task-cancel").disabled = false; }
}

RENDER.tasks = () => {
  const off = T.enabled === false;
  $("tasks-off").hidden = !off;
  $("tasks-on").hidden = off;
  if (off) {
    $("tasks-off").textContent = "Durable tasks are off here: this console's runtime runs without them " +
      "(A2A_TASKS=1 turns them on; they need JetStream).";
    $("tasks-count").textContent = "";
    return;
  }
  $("tasks-note").hidden = !T.note;
  $("tasks-note").textContent = T.note ? "Listed: those submitted or opened here (" + T.note + ")." : "";
  const all = [...T.rows.values()];
  const running = all.filter((t) => !t.ended).length;
  $("tasks-count").textContent = all.length ? "(" + all.length + (running ? ", " + running + " not ended" : "") + ")" : "";
  redraw($("tasks"), () => {
    if (T.enabled === null) return [el("li", "empty", "Reading the tasks\u2026")];
    if (!all.length) return [el("li", "empty", "No tasks yet: submit one.")];
    return all.map((t) => {
      const li = el("li", "task " + t.state);
      li.dataset.id = t.id;
      const b = el("button", "row");
      b.type = "button"; b.dataset.key = t.id;
      if (t.id === T.shown) b.setAttribute("aria-current", "true");
      const at = el("time", "at", clock(t.submittedAt));
      at.title = "submitted " + stamp(t.submittedAt);
      const what = el("span", "what");
      what.append(el("span", "agent", t.agent), "." + t.action);
      const code = t.error && t.state === "failed" ? " \u00b7 " + t.error.code : "";
      b.append(at, what, taskBadge(t), taskDuration(t), el("span", "who attempts", attemptsText(t) + code));
      b.title = "task " + t.id;
      b.onclick = () => openTask(t.id);
      li.append(b);
      return li;
    });
  });
};

RENDER.task = () => {
  const t = T.detail;
  $("task-empty").hidden = !!t;
  $("task-detail").hidden = !t;
  $("task-state").hidden = !t;
  if (!t) return;
  $("task-state").textContent = t.state; $("task-state").className = "badge " + t.state;
  const what = $("task-what");
  what.replaceChildren(el("span", "agent", t.agent), "." + t.action);
  const dl = el("dl");
  const add = (k, v, cls) => {
    if (v === null || v === undefined || v === "") return;
    const dd = v instanceof Node ? v : el("dd", cls || "", v);
    dl.append(el("dt", "", k), dd);
  };
  add("task", t.id, "mono");
  add("attempts", t.attempts ? t.attempts + " of " + t.maxAttempts + " at most" : attemptsText(t));
  add("submitted", stamp(t.submittedAt));
  add("started", t.startedAt ? stamp(t.startedAt) : null);
  add("ended", t.endedAt ? stamp(t.endedAt) : null);
  add(t.ended ? "took" : t.state === "running" ? "running for" : "waiting for", taskDuration(t, "dd"));
  add("deadline", t.ended ? null : stamp(t.deadline));
  add("key", t.key);
  add("instance", t.instance);
  add("tokens", t.tokens);
  if (t.error) add("error", t.error.code + ": " + t.error.message, "error-text");
  if (t.result !== null && t.result !== undefined) {
    const dd = el("dd");
    dd.append(el("pre", "result", t.result));
    add("result", dd);
  }
  add("conversation", t.conversationId, "mono");
  $("task-facts").replaceWith(dl);
  dl.id = "task-facts";
  $("task-cancel").disabled = t.ended;
  $("task-cancel").title = t.ended ? "the task has ended" : "no attempt starts after this; the running one is stopped";
  $("journal-count").textContent = "(" + (t.earlier + t.events.length) + " event" + (t.earlier + t.events.length === 1 ? "" : "s") + ")";
  const journal = $("journal");
  const atEnd = journal.scrollTop + journal.clientHeight >= journal.scrollHeight - 8;
  const items = t.events.map(eventItem);
  if (t.earlier) items.unshift(el("li", "empty", t.earlier + " earlier event" + (t.earlier === 1 ? "" : "s") + " not shown"));
  if (!items.length) items.push(el("li", "empty", t.ended ? "Nothing was journaled." : "Nothing yet: the task waits for an attempt."));
  redraw(journal, () => items);
  if (atEnd) journal.scrollTop = journal.scrollHeight;
};

function eventItem(e) {
  const li = el("li", "event " + e.kind);
  const at = el("time", "at", e.at ? clock(e.at) : "");
  if (e.at) at.title = stamp(e.at);
  li.append(el("span", "n", "#" + e.n), at, el("span", "badge " + (e.kind === "ended" ? e.state : e.kind), e.kind));
  const line = el("span", "line");
  if (e.kind === "attempt") line.textContent = "attempt " + e.attempt + " started" + (e.instance ? " on " + e.instance : "");
  else if (e.kind === "handed-back") line.textContent = "attempt " + e.attempt + ": " + (e.message || "handed back");
  else if (e.kind === "child" && e.child) {
    const open = el("button", "link", short(e.child.taskId));
    open.type = "button"; open.dataset.key = "child:" + e.n;
    open.title = "open the child task " + e.child.taskId;
    open.setAttribute("aria-label", "open the child task " + e.child.taskId);
    open.onclick = () => openTask(e.child.taskId, true);
    line.append("attempt " + e.attempt + " submitted the task ", open, " to " + e.child.agent);
  } else if (e.kind === "ended") {
    line.textContent = e.state + (e.error ? ": " + e.error.code + ": " + e.error.message : "") +
      (e.attempt ? " (attempt " + e.attempt + ")" : "");
  } else line.textContent = (e.attempt ? "attempt " + e.attempt + ": " : "") + (e.text || "");
  li.append(line);
  return li;
}

RENDER.taskAgents = () => {
  const names = [...new Set(S.agents.map((a) => a.name))].sort();
  const list = $("task-agents");
  if (list.dataset.names === names.join(",")) return;
  list.dataset.names = names.join(",");
  list.replaceChildren(...names.map((n) => { const o = el("option"); o.value = n; return o; }));
};

function wireTasks() {
  $("task-form").addEventListener("submit", submitTask);
  $("task-open").addEventListener("submit", openById);
  $("task-cancel").onclick = cancelTask;
  $("task-agent").value = remembered("task-agent");
  $("task-action").value = remembered("task-action") || "run";
  roving($("tasks"));
  document.addEventListener("visibilitychange", () => {
    if (document.hidden || T.enabled === false) return;
    loadTasks();
    if (T.detail && !T.detail.ended) loadTask();
  });
  schedule("tasks", "task");
  loadTasks();
}
