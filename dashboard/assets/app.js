// limitdb's dashboard: polls data.json and draws it. No library, no build
// step: the server embeds this file as it is.
"use strict";

const POLL_MS = 1000;   // how often the page asks for the figures
const KEEP = 180;       // points per chart: three minutes at one poll a second
const SVG = "http://www.w3.org/2000/svg";

let prev = null;               // the previous poll's view
const series = new Map();      // policy name -> [{t, admitted, denied, shadow}] per second

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function svgEl(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function fmt(n) {
  if (typeof n !== "number") return String(n);
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

function duration(s) {
  if (s < 120) return s + " s";
  if (s < 7200) return Math.floor(s / 60) + " min";
  if (s < 172800) return Math.floor(s / 3600) + " h";
  return Math.floor(s / 86400) + " d";
}

function facts(dl, pairs) {
  dl.replaceChildren();
  for (const [k, v, cls] of pairs) {
    dl.append(el("dt", {}, k), el("dd", cls ? { class: cls } : {}, v));
  }
}

function table(t, head, rows, numeric) {
  t.replaceChildren();
  const tr = el("tr");
  head.forEach((h, i) => tr.append(el("th", numeric && numeric[i] ? { class: "num" } : {}, h)));
  t.append(el("thead", {}, tr));
  const body = el("tbody");
  for (const r of rows) {
    const row = el("tr");
    r.forEach((c, i) => row.append(el("td", numeric && numeric[i] ? { class: "num" } : {}, c)));
    body.append(row);
  }
  t.append(body);
}

// record adds, for each policy, the requests per second since the last poll.
function record(view) {
  if (prev) {
    const dt = (view.time_ms - prev.time_ms) / 1000;
    const before = new Map(prev.policies.map(p => [p.name, p]));
    for (const p of view.policies) {
      const b = before.get(p.name);
      if (!b || dt <= 0) continue;
      const rate = (now, then) => Math.max(now - then, 0) / dt;
      const s = series.get(p.name) || [];
      s.push({ t: view.time_ms, admitted: rate(p.admitted, b.admitted), denied: rate(p.denied, b.denied), shadow: rate(p.shadow_denied, b.shadow_denied) });
      if (s.length > KEEP) s.splice(0, s.length - KEEP);
      series.set(p.name, s);
    }
  }
  for (const name of series.keys()) {
    if (!view.policies.some(p => p.name === name)) series.delete(name);
  }
  prev = view;
}

function chart(p) {
  const s = series.get(p.name) || [];
  const W = 300, H = 100;
  let top = 1;
  for (const pt of s) top = Math.max(top, pt.admitted, pt.denied, pt.shadow);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img",
    "aria-label": `${p.name}: requests per second`, "data-points": s.length, "data-max": top === 1 && !s.some(x => x.admitted || x.denied || x.shadow) ? 0 : top });
  svg.append(svgEl("line", { x1: 0, y1: H - 0.5, x2: W, y2: H - 0.5, stroke: "#d8dde3" }));
  const line = (key, color) => {
    if (s.length === 0) return;
    const x = i => s.length === 1 ? W : (i * W) / (KEEP - 1) + (W - ((s.length - 1) * W) / (KEEP - 1));
    const y = v => H - 2 - (v / top) * (H - 6);
    const d = s.map((pt, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(pt[key]).toFixed(1)}`).join(" ");
    svg.append(svgEl("path", { d, class: `series ${key}`, fill: "none", stroke: color, "stroke-width": 1.5, "vector-effect": "non-scaling-stroke", "data-series": key }));
  };
  line("admitted", "#1a7f37");
  line("denied", "#c62828");
  if (p.shadow) line("shadow", "#b26a00");
  const last = s.length ? s[s.length - 1] : { admitted: 0, denied: 0, shadow: 0 };
  const legend = el("div", { class: "legend" },
    el("span", { class: "admitted" }, `admitted ${fmt(last.admitted)}/s`), " · ",
    el("span", { class: "denied" }, `denied ${fmt(last.denied)}/s`));
  if (p.shadow) legend.append(" · ", el("span", { class: "shadow" }, `would deny ${fmt(last.shadow)}/s`));
  legend.append(` · peak ${fmt(top)}/s`);
  const box = el("div", { class: "chart", "data-policy": p.name },
    el("div", { class: "title" }, p.name, p.shadow ? " (shadow)" : ""), legend);
  box.append(svg);
  return box;
}

function renderNode(n, user) {
  const pairs = [["role", n.role], ["version", n.version], ["uptime", duration(n.uptime_seconds)], ["keys", fmt(n.keys)],
    ["clients", n.clients], ["memory", fmt(n.memory_bytes) + "B"], ["replication offset", n.repl_offset]];
  if (n.master) {
    pairs.push(["primary", n.master.addr], ["link", n.master.link_up ? "up" : "down (" + n.master.state + ")", n.master.link_up ? "state-ok" : "state-fail"],
      ["last I/O", n.master.last_io_seconds < 0 ? "never" : n.master.last_io_seconds + " s ago"]);
  }
  pairs.push(["viewed as", user]);
  facts(document.getElementById("node"), pairs);
  document.getElementById("node").setAttribute("data-role", n.role);
  const box = document.getElementById("replicas");
  if (!n.replicas.length) {
    box.replaceChildren(el("p", { class: "note" }, n.master ? "this node is a replica" : "no replicas attached"));
    return;
  }
  const t = el("table", { class: "grid" });
  table(t, ["replica", "state", "lag", "behind"], n.replicas.map(r => [r.addr, r.state, r.lag_seconds + " s", fmt(r.behind_bytes) + "B"]), [0, 0, 1, 1]);
  box.replaceChildren(t);
}

function renderCluster(c, region) {
  const dl = document.getElementById("cluster");
  if (!c.enabled) {
    facts(dl, [["cluster mode", "off"]]);
  } else {
    facts(dl, [["cluster mode", c.emulated ? "emulated (one node)" : "on"], ["state", c.state, "state-" + c.state],
      ["slots assigned", c.slots_assigned], ["slots ok", c.slots_ok], ["known nodes", c.known_nodes],
      ["primaries with slots", c.size], ["epoch", c.current_epoch], ["node id", c.my_id]]);
  }
  dl.setAttribute("data-state", c.enabled ? c.state : "off");
  const box = document.getElementById("region-box");
  if (!region || !region.length) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const t = el("table", { class: "grid" });
  table(t, ["field", "value"], region.map(f => [f.name, f.value]));
  document.getElementById("region").replaceChildren(t);
}

function renderPolicies(ps) {
  const charts = document.getElementById("charts");
  if (!ps.length) {
    charts.replaceChildren(el("p", { class: "note" }, "no named policies (RL.POLICY SET or --rules)"));
  } else {
    charts.replaceChildren(...ps.map(chart));
  }
  const pct = p => {
    const n = p.admitted + p.denied;
    return n ? ((100 * (p.shadow ? p.shadow_denied : p.denied)) / n).toFixed(1) + "%" : "–";
  };
  table(document.getElementById("policies"),
    ["policy", "algorithm", "limit", "mode", "admitted", "denied", "would deny (shadow)", "denied share"],
    ps.map(p => [p.name, p.algorithm, `${p.limit} per ${p.period}`, p.shadow ? "shadow" : "enforcing", fmt(p.admitted), fmt(p.denied), fmt(p.shadow_denied), pct(p)]),
    [0, 0, 0, 0, 1, 1, 1, 1]);
}

function renderCommands(cs) {
  table(document.getElementById("commands"), ["command", "admitted", "denied"],
    cs.map(c => [c.command, fmt(c.admitted), fmt(c.denied)]), [0, 1, 1]);
}

// renderValue draws an analytics view of any shape: lists of records as
// tables, records as headed sections, the rest as text.
function renderValue(v, depth) {
  if (Array.isArray(v)) {
    if (!v.length) return el("p", { class: "note" }, "none");
    if (v.every(x => x && typeof x === "object" && !Array.isArray(x))) {
      const cols = [];
      for (const x of v) for (const k of Object.keys(x)) if (!cols.includes(k)) cols.push(k);
      const t = el("table", { class: "grid" });
      table(t, cols, v.map(x => cols.map(k => typeof x[k] === "object" && x[k] !== null ? JSON.stringify(x[k]) : (x[k] ?? ""))),
        cols.map(k => typeof v[0][k] === "number"));
      return t;
    }
    return el("p", {}, v.map(x => typeof x === "object" ? JSON.stringify(x) : String(x)).join(", "));
  }
  if (v && typeof v === "object") {
    const box = el("div", { class: "analytics-part" });
    for (const [k, x] of Object.entries(v)) {
      box.append(el(depth < 2 ? "h3" : "h4", {}, k), renderValue(x, depth + 1));
    }
    return box;
  }
  return el("p", {}, String(v));
}

// renderTop draws limitdb's analytics view (RL.TOP's rankings per policy
// and per limiter command): for each, its most denied keys, its most hit
// keys and the keys nearest their limit, with each count's error bound.
function renderTop(a) {
  const box = el("div", { class: "analytics-part" });
  box.append(el("p", { class: "note" }, `over this period and the one before (periods of ${duration(Math.round(a.period_seconds))}); ` +
    "a count is at most its error above the truth"));
  let shown = 0;
  for (const [kind, groups] of [["policy", a.policies], ["command", a.commands]]) {
    for (const g of groups || []) {
      const part = el("div", { class: "topgroup", "data-group": g.name });
      part.append(el("h3", {}, `${kind} ${g.name}`));
      for (const [title, rows] of [["most denied", g.denied], ["most hits", g.hits], ["nearest the limit", g.near]]) {
        const t = el("table", { class: "grid" });
        table(t, [title, "count", "± error"], (rows || []).map(r => [r.key, fmt(r.count), fmt(r.error)]), [0, 1, 1]);
        part.append(t);
      }
      box.append(part);
      shown++;
    }
  }
  if (!shown) box.append(el("p", { class: "note" }, "no decisions recorded yet"));
  return box;
}

function renderAnalytics(a, note) {
  document.getElementById("analytics-note").textContent = note || "";
  const box = document.getElementById("analytics");
  box.replaceChildren();
  if (a === null || a === undefined) return;
  box.append(Array.isArray(a.policies) ? renderTop(a) : renderValue(a, 0));
}

function render(view) {
  record(view);
  renderNode(view.node, view.user);
  renderCluster(view.cluster, view.region);
  renderPolicies(view.policies);
  renderCommands(view.commands);
  renderAnalytics(view.analytics, view.analytics_note);
  const st = document.getElementById("status");
  st.className = "status";
  st.textContent = `${view.node.role} · updated ${new Date(view.time_ms).toLocaleTimeString()}`;
  document.body.setAttribute("data-polls", String((Number(document.body.getAttribute("data-polls")) || 0) + 1));
}

async function poll() {
  const st = document.getElementById("status");
  try {
    // From the origin, not relative: a page opened as http://user:pass@host/
    // keeps the credentials in its URL, and fetch refuses a URL holding
    // them; the browser sends the credentials it was given for the origin.
    const res = await fetch(location.origin + "/dashboard/data.json", { cache: "no-store", credentials: "same-origin" });
    if (!res.ok) {
      st.className = "status error";
      st.textContent = res.status === 401 ? "not logged in: reload the page to give a user and password"
        : `${res.status}: ${(await res.text()).trim()}`;
    } else {
      render(await res.json());
    }
  } catch (e) {
    st.className = "status error";
    st.textContent = "cannot reach the server: " + e.message;
  }
  setTimeout(poll, POLL_MS);
}

poll();
