"use strict";
// The page's start: the state as it is, then the live events (server-sent).

let source = null;
let missed = false;  // the stream broke: what came meanwhile is read again

async function load() {
  let st;
  try { st = await api("/api/state"); }
  catch (e) { $("conn").textContent = "offline"; $("conn").title = e.message; setTimeout(load, 3000); return; }
  $("user").textContent = st.user;
  S.user = st.user; S.agents = st.agents; S.traces = st.traces;
  const running = new Set(st.running.map((c) => c.requestId));
  for (const id of [...S.running.keys()]) if (!running.has(id)) S.running.delete(id);  // ended unseen, or gone
  for (const c of st.calls) addCall(c);
  for (const c of st.running) addCall(c, st.now);
  for (const s of st.sessions) keep(s);
  fillPickers();
  schedule("sessions", "session", "filters", "calls", "conversations", "tree", "agents", "taskAgents");
  if (!source) follow();
}

function follow() {
  const es = source = new EventSource("/api/events");
  es.onopen = () => {
    $("conn").textContent = "live"; $("conn").className = "badge live";
    if (missed) { missed = false; load(); }
  };
  es.onerror = () => { missed = true; $("conn").textContent = "reconnecting"; $("conn").className = "badge"; };
  es.addEventListener("session", (m) => {
    const s = JSON.parse(m.data);
    keep(s);
    schedule("sessions", "conversations");
    if (s.id === S.selected) schedule("session");
  });
  es.addEventListener("call", (m) => {
    addCall(JSON.parse(m.data));
    schedule("calls", "conversations", "tree", "agents", "filters");
  });
  es.addEventListener("agents", (m) => {
    S.agents = JSON.parse(m.data);
    fillPickers();
    schedule("agents", "filters", "taskAgents");
  });
}

wireSession();
wireCalls();
wireTasks();
load();
