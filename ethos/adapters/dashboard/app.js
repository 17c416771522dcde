// ethos dashboard: plain JavaScript over the server's /ethos/ endpoints; no build step,
// no network beyond this server. Memory text is shown with textContent, never as HTML.
"use strict";

const state = { agent: null, searches: 0, access: "none", token: sessionStorage.getItem("ethos-token") || "" };
const $ = (selector) => document.querySelector(selector);

async function api(path, body) {
  const headers = { Accept: "application/json" };
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  const init = { headers };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (response.status === 401) $("#token-form").hidden = false;
  if (!response.ok) throw new Error(data.detail || response.statusText);
  return data;
}

function say(text) { $("#message").textContent = text || ""; }

function cell(row, text, className) {
  const td = document.createElement("td");
  if (text instanceof Node) td.append(text); else td.textContent = text ?? "";
  if (className) td.className = className;
  row.append(td);
  return td;
}

function num(value, digits = 3) {
  return value === null || value === undefined ? "—" : Number(value).toFixed(digits);
}

function when(iso) {
  if (!iso) return "never";
  return new Date(iso).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

// A moment as the server reads it against its clock ("in 21 days", "3 h ago":
// ethos.domain.spans), the full date as its title.
function relative(iso, text) {
  const span = document.createElement("span");
  span.textContent = iso ? text : "never";
  if (iso) span.title = new Date(iso).toLocaleString();
  return span;
}

function kind(table) {
  return { memory_vectors: "vector", episodic_traces: "episode", semantic_facts: "fact" }[table] || table;
}

function bar(value) {
  const outer = document.createElement("span");
  outer.className = "bar";
  const inner = document.createElement("i");
  inner.style.width = `${Math.max(0, Math.min(1, value)) * 100}%`;
  outer.append(inner);
  const wrap = document.createElement("span");
  wrap.append(outer, num(value));
  return wrap;
}

// The salience a memory will have if never retrieved again, until it is pruned: a
// polyline over [days from now, salience], and the prune threshold dashed.
function forecast(points, threshold) {
  const ns = "http://www.w3.org/2000/svg";
  const w = 120, h = 32;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "forecast");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  if (!points.length) return svg;
  const span = points[points.length - 1][0] || 1;
  const y = (s) => (h - 2 - s * (h - 4)).toFixed(1);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points.map(([d, s]) => `${((d / span) * (w - 2) + 1).toFixed(1)},${y(s)}`).join(" "));
  const floor = document.createElementNS(ns, "line");
  floor.setAttribute("x1", 0); floor.setAttribute("x2", w);
  floor.setAttribute("y1", y(threshold)); floor.setAttribute("y2", y(threshold));
  const title = document.createElementNS(ns, "title");
  title.textContent = `${num(span, 1)} days ahead`;
  svg.append(floor, line, title);
  return svg;
}

function button(label, className, action) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.className = className;
  b.disabled = state.access !== "write";
  b.addEventListener("click", async () => {
    b.disabled = true;
    try { await action(); say(""); } catch (error) { say(error.message); }
    await refresh();
  });
  return b;
}

async function loadAccess() {
  try {
    state.access = (await api("/ethos/whoami")).access;
  } catch (error) {
    state.access = "none";
    say(error.message);
  }
  const badge = $("#access");
  badge.textContent = state.access === "write" ? "read & write" : state.access === "read" ? "read only" : "no access";
  badge.className = `badge ${state.access}`;
}

async function loadAgents() {
  const agents = await api("/ethos/agents");
  const list = $("#agents");
  list.replaceChildren();
  for (const a of agents) {
    const li = document.createElement("li");
    li.dataset.agent = a.agent_id;
    li.className = a.agent_id === state.agent ? "selected" : "";
    const name = document.createElement("span");
    name.textContent = a.agent_id;
    const count = document.createElement("span");
    count.className = "count";
    count.textContent = `${a.live} live · ${a.pruned} gone`;
    count.title = Object.entries(a.tables).map(([t, c]) => `${kind(t)}: ${c.live} live, ${c.pruned} pruned, ${c.pinned} pinned`).join("\n");
    li.append(name, count);
    li.addEventListener("click", () => {
      if (a.agent_id !== state.agent) clearSearch();
      state.agent = a.agent_id;
      refresh();
    });
    list.append(li);
  }
  if (!state.agent && agents.length) {
    state.agent = agents[0].agent_id;
    list.firstChild.classList.add("selected");
  }
}

async function loadMemories() {
  $("#agent-name").textContent = state.agent || "—";
  const live = $("#memories tbody"), gone = $("#pruned tbody");
  live.replaceChildren(); gone.replaceChildren();
  if (!state.agent) return;
  const agent = encodeURIComponent(state.agent);
  for (const m of await api(`/ethos/memories?agent=${agent}&limit=100`)) {
    const row = live.insertRow();
    row.dataset.id = m.id;
    cell(row, m.content, "content");
    cell(row, kind(m.table));
    cell(row, m.policy + (m.pinned ? " · pinned" : ""));
    cell(row, bar(m.salience), "num");
    cell(row, m.retrieval_count, "num");
    cell(row, forecast(m.forecast, m.prune_threshold));
    cell(row, relative(m.prunes_at, m.readable.prunes_at), "num");
    const actions = cell(row, "", "actions");
    actions.append(
      button("pin", "pin", () => api(`/ethos/memories/${m.id}/policy`, { policy: "permanent" })),
      button("useful", "useful", () => api("/ethos/feedback", { ids: [m.id], verdict: "useful" })),
      button("wrong", "wrong", () => api("/ethos/feedback", { ids: [m.id], verdict: "wrong" })),
      button("forget", "forget", async () => {
        await api("/ethos/forget", { ids: [m.id] });
        $(`#search-results tr[data-id="${m.id}"]`)?.remove();  // a hit no more
      }),
    );
  }
  for (const m of await api(`/ethos/memories?agent=${agent}&pruned=true&limit=50`)) {
    const row = gone.insertRow();
    row.dataset.id = m.id;
    cell(row, m.content, "content");
    cell(row, kind(m.table));
    cell(row, m.prune_reason);
    cell(row, relative(m.pruned_at, m.readable.pruned_at), "num");
    cell(row, "", "actions").append(
      button("recover", "recover", () => api("/ethos/recover", { ids: [m.id] })),
    );
  }
}

async function loadStatus() {
  const s = await api("/ethos/status");
  const facts = {
    "daemons alive": s.daemons.length,
    "leader lock": s.daemons.find((d) => d.holds_leader_lock)?.id || "free",
    "last sweep": s.last_sweep ? when(s.last_sweep.finished_at || s.last_sweep.started_at) : "none yet",
    // the sweep's hints of work due: a row may stand in several, so at most this many rows
    "sweep hints due": Object.entries(s.due).map(([t, n]) => `${kind(t)} ≤ ${n} rows`).join(", "),
    "retrievals waiting": `${s.ltp.backlog} buffered, ${s.ltp.queue_backlog} queued`,
  };
  const dl = $("#status");
  dl.replaceChildren();
  for (const [name, value] of Object.entries(facts)) {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = name; dd.textContent = value;
    dl.append(dt, dd);
  }
  const sweeps = $("#sweeps tbody");
  sweeps.replaceChildren();
  for (const r of s.recent_sweeps) {
    const row = sweeps.insertRow();
    cell(row, relative(r.started_at, r.started), "num").title = `${r.trigger}, ${r.status}`;
    cell(row, r.scanned, "num"); cell(row, r.pruned, "num"); cell(row, num(r.duration_ms, 0), "num");
  }
  const recent = Object.fromEntries(s.pruned_last_day.map((p) => [`${p.table_name}/${p.reason}`, p.count]));
  const reasons = $("#reasons tbody");
  reasons.replaceChildren();
  for (const p of s.pruned) {
    const row = reasons.insertRow();
    cell(row, kind(p.table_name)); cell(row, p.reason);
    cell(row, recent[`${p.table_name}/${p.reason}`] || 0, "num"); cell(row, p.count, "num");
  }
}

// Another agent's view: the hits shown (and the query typed) were the last agent's.
function clearSearch() {
  state.searches += 1;  // an answer still on its way is for the agent left
  $("#search-results").tBodies[0].replaceChildren();
  $("#search-results").hidden = true;
  $("#search-query").value = "";
  say("");
}

async function search(event) {
  event.preventDefault();
  if (!state.agent) return;
  const results = $("#search-results");
  const body = results.tBodies[0];
  const asked = ++state.searches;
  try {
    const hits = await api("/ethos/recall", {
      agent: state.agent, query: $("#search-query").value, k: 10, record: $("#search-record").checked,
    });
    if (asked !== state.searches) return;
    body.replaceChildren();
    for (const h of hits) {
      const row = body.insertRow();
      row.dataset.id = h.id;
      cell(row, h.content, "content");
      cell(row, kind(h.table));
      cell(row, num(h.score, 4), "num");
      cell(row, num(h.text_rank, 4), "num");
      cell(row, num(h.similarity, 4), "num");
      cell(row, bar(h.salience), "num");
    }
    results.hidden = false;
    say(hits.length ? "" : "nothing found");
  } catch (error) { say(error.message); }
}

async function refresh() {
  try {
    await loadAgents();
    await loadMemories();
    await loadStatus();
    document.body.dataset.ready = "yes";
  } catch (error) { say(error.message); }
}

document.addEventListener("DOMContentLoaded", async () => {
  $("#search-form").addEventListener("submit", search);
  $("#token-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    state.token = $("#token").value.trim();
    sessionStorage.setItem("ethos-token", state.token);
    $("#token-form").hidden = true;
    await loadAccess();
    await refresh();
  });
  await loadAccess();
  await refresh();
});
