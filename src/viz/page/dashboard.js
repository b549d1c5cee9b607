// The baton dashboard page: a snapshot when it connects, then diffs (at most ten a
// second), drawn as SVG. Served by baton itself; nothing is fetched from elsewhere.

const SVG = "http://www.w3.org/2000/svg";
let state;
let replay;
// What the chart shows: { actor: id }, or a rank group's { group: id, part } where part is
// "group", "teardown" or a rank's number.
let selected;
let drawPending = false;

const $ = (id) => document.getElementById(id);

function svg(tag, attrs, parent) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (parent) parent.appendChild(el);
  return el;
}

function text(parent, x, y, content, cls) {
  const t = svg("text", { x, y, class: cls || "" }, parent);
  t.textContent = content;
  return t;
}

function applyDiff(diff) {
  for (const key of [
    "run",
    "now",
    "finished",
    "ok",
    "violation",
    "total",
    "counts",
    "outcomes",
    "graphMode",
  ])
    state[key] = diff[key];
  if (diff.throughput) state.throughput = diff.throughput;
  if (diff.graph) state.graph = diff.graph;
  for (const key of ["jobs", "kinds", "groups", "charts", "actors"]) {
    for (const [id, value] of Object.entries(diff[key] || {})) {
      if (value === null) delete state[key][id];
      else state[key][id] = value;
    }
  }
}

function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    draw();
  });
}

function draw() {
  $("run-id").textContent = state.run || "";
  const status = $("status");
  status.textContent = state.finished
    ? state.ok
      ? "finished: ok"
      : "finished: not ok"
    : state.run === undefined
      ? "not started yet"
      : "running";
  status.className = `status ${state.finished ? (state.ok ? "ok" : "failed") : ""}`;
  status.dataset.finished = String(state.finished);
  const broken = state.violation;
  if (broken) {
    status.textContent = `FAIL invariant ${broken.invariant}`;
    status.className = "status failed";
  } else if (replay && replay.violationAt === undefined && replay.position === replay.length) {
    // A simulated run may end not ok (its faults failed jobs) while the seed passed: at the
    // end of a replay that broke no invariant, the status says both.
    status.textContent += " · no invariant broken";
  }
  status.dataset.outcome = status.textContent;
  $("violation").hidden = !broken;
  $("violation").textContent = broken ? `at t = ${broken.at} ms: ${broken.message}` : "";
  $("total").textContent = state.total;
  for (const s of ["blocked", "ready", "running", "storing"])
    $(`count-${s}`).textContent = state.counts[s];
  for (const [k, v] of Object.entries(state.outcomes)) $(`outcome-${k}`).textContent = v;
  drawGraph();
  drawActors();
  drawGroups();
  drawThroughput();
  drawChart();
  if (replay) {
    $("slider").max = replay.length;
    $("slider").value = replay.position;
    $("replay-position").textContent =
      `event ${replay.position} of ${replay.length} · t = ${replay.at} ms${replay.event ? ` · ${replay.event}` : ""}`;
    $("to-violation").hidden = replay.violationAt === undefined;
  }
}

function drawGraph() {
  const root = $("graph");
  root.replaceChildren();
  const byKind = state.graphMode === "kinds";
  $("graph-mode").textContent = byKind ? "by kind (large graph)" : "by job";
  const nodes = Object.values(byKind ? state.kinds : state.jobs);
  const named = namedByViolation();
  // The model placed every node (src/viz/graphLayout.ts); by job, each column is headed by
  // the kinds of its jobs (cut to the column, whole on hover): the dots say a job's state, the
  // heading which step of the graph it is. Drawn at its own size, never scaled down: the
  // panel scrolls sideways for a graph wider than it, and the headings stay legible.
  for (const h of state.graph.headings) {
    const t = text(root, h.x, h.y, h.text, "layer-label");
    clip(t, h.room);
    svg("title", {}, t).textContent = h.text;
  }
  const pos = new Map(nodes.map((n) => [byKind ? n.kind : n.id, n]));
  for (const n of nodes) {
    for (const dep of n.deps) {
      const from = pos.get(dep);
      if (from) svg("line", { x1: from.x, y1: from.y, x2: n.x, y2: n.y, class: "dep" }, root);
    }
  }
  for (const n of nodes) {
    if (byKind) {
      const g = svg("g", { class: "kind", transform: `translate(${n.x},${n.y - 12})` }, root);
      const total = Object.values(n.counts).reduce((a, b) => a + b, 0) || 1;
      let offset = 0;
      for (const s of ["completed", "failed", "storing", "running", "ready", "blocked"]) {
        const w = (150 * n.counts[s]) / total;
        if (w > 0) svg("rect", { x: offset, y: 0, width: w, height: 14, class: s }, g);
        offset += w;
      }
      text(g, 0, 28, `${n.kind}: ${n.counts.completed}/${total}`);
      if (named.kinds.has(n.kind)) {
        const ring = svg("rect", { x: -3, y: -3, width: 156, height: 20, class: "ring" }, g);
        svg("title", {}, ring).textContent = `${n.kind}: has a job the broken invariant names`;
      }
    } else {
      const mark = named.jobs.has(n.id);
      const c = svg(
        "circle",
        { cx: n.x, cy: n.y, r: 7, class: `job ${n.state}${mark ? " named" : ""}` },
        root,
      );
      svg("title", {}, c).textContent =
        `${n.label} (${n.id}): ${n.state}${mark ? " (named by the broken invariant)" : ""}`;
    }
  }
  const { width, height } = state.graph;
  root.setAttribute("viewBox", `0 0 ${width} ${height}`);
  root.style.width = `${width}px`;
  root.style.height = `${height}px`;
}

/** The jobs, kinds and actors a broken invariant names (ringed in red), none before it broke. */
function namedByViolation() {
  const v = state.violation;
  return {
    jobs: new Set(v ? v.jobs : []),
    kinds: new Set(v ? v.kinds : []),
    actors: new Set(v ? v.actors : []),
  };
}

/** Cuts a text that its font draws wider than `room` to fit, ending it with "…". */
function clip(t, room) {
  const full = t.textContent;
  for (let n = full.length - 1; n > 0 && t.getComputedTextLength() > room; n--)
    t.textContent = `${full.slice(0, n)}…`;
}

function leafName(actor) {
  const leaf = actor.states[actor.states.length - 1] || "";
  return actor.states.length > 0 ? leaf.split(".").slice(1).join(".") : actor.status;
}

function drawActors() {
  const body = $("actors").tBodies[0];
  body.replaceChildren();
  const named = namedByViolation().actors;
  const actors = Object.values(state.actors).sort(
    (a, b) => (a.machine === "coordinator" ? -1 : 0) - (b.machine === "coordinator" ? -1 : 0),
  );
  for (const actor of actors) {
    const row = body.insertRow();
    row.dataset.actor = actor.id;
    if (actor.id === selected?.actor) row.classList.add("selected");
    if (actor.status !== "active") row.classList.add("done");
    if (named.has(actor.id)) row.classList.add("named");
    const job = actor.job ? `${actor.jobLabel ? `${actor.jobLabel} ` : ""}${actor.job}` : "";
    for (const value of [actor.label, actor.machine, leafName(actor), job]) {
      const cell = row.insertCell();
      cell.textContent = value;
      cell.title = value;
    }
    // A worker lost (killed, cut off, silent) says why under its state, where a normal close
    // says only "closed".
    if (actor.closed) {
      row.classList.add("lost");
      const why = document.createElement("small");
      why.className = "why";
      why.textContent = actor.closed;
      row.cells[2].appendChild(why);
      row.cells[2].title = `${leafName(actor)}: ${actor.closed}`;
    }
    pickOnClick(row, { actor: actor.id });
  }
}

/** Makes `el` select `what` for the chart when clicked, and marks it while it is selected. */
function pickOnClick(el, what) {
  el.classList.add("pickable");
  if (JSON.stringify(what) === JSON.stringify(selected)) el.classList.add("selected");
  el.addEventListener("click", () => {
    selected = what;
    draw();
  });
}

function drawGroups() {
  const root = $("groups");
  const groups = Object.values(state.groups);
  root.replaceChildren();
  if (groups.length === 0) {
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = "no rank groups in this run";
    root.appendChild(p);
    return;
  }
  for (const group of groups) {
    const div = document.createElement("div");
    div.className = "group";
    div.dataset.group = group.id;
    div.dataset.state = group.state;
    const title = document.createElement("span");
    title.className = "group-title";
    const size = group.worldSize === undefined ? "" : `, ${group.worldSize} ranks`;
    title.textContent = `${group.id}${group.job ? ` (job ${group.job})` : ""}: ${group.state}${size}`;
    title.title = "the group's state chart";
    pickOnClick(title, { group: group.id, part: "group" });
    div.appendChild(title);
    for (const [rank, view] of Object.entries(group.ranks)) {
      const span = document.createElement("span");
      span.className = `rank ${view.phase}`;
      span.dataset.rank = rank;
      span.dataset.phase = view.phase;
      const how =
        view.code !== undefined ? ` (code ${view.code})` : view.signal ? ` (${view.signal})` : "";
      span.textContent = `${rank}: ${view.phase}${how}`;
      span.title = `rank ${rank}'s state chart`;
      pickOnClick(span, { group: group.id, part: Number(rank) });
      if (view.pid !== undefined) {
        span.dataset.pid = String(view.pid);
        const pid = document.createElement("small");
        pid.textContent = ` · pid ${view.pid}`;
        span.appendChild(pid);
      }
      div.appendChild(span);
    }
    if (group.teardown) {
      const span = document.createElement("span");
      span.className = "teardown";
      span.dataset.teardown = group.teardown;
      span.textContent = `teardown: ${group.teardown}`;
      span.title = "the teardown's state chart";
      pickOnClick(span, { group: group.id, part: "teardown" });
      div.appendChild(span);
    }
    root.appendChild(div);
  }
}

function drawThroughput() {
  const root = $("throughput");
  root.replaceChildren();
  // The model chose the bars' width from the run's length (1 ms bars for a run over in 60 ms,
  // minutes for a day's) and says what they count; the axis runs from the start to now (a
  // replay's: to its end, the bars filling in as it steps).
  const t = state.throughput;
  $("throughput-caption").textContent = t.caption;
  const peak = Math.max(1, ...t.bars);
  const w = 600;
  const h = 90;
  // The peak's label has the band above the bars to itself: the tallest bar starts below it.
  const top = 14;
  const bar = w / t.slots;
  t.bars.forEach((n, i) => {
    const bh = ((h - top) * n) / peak;
    svg(
      "rect",
      { x: i * bar, y: h - bh, width: Math.max(bar - 1, 1), height: bh, class: "bar" },
      root,
    );
  });
  // A replay's axis runs past the step it shows: a line marks where that step is.
  if (t.slots > t.bars.length) {
    const x = t.bars.length * bar;
    svg("line", { x1: x, y1: top, x2: x, y2: h, class: "now" }, root);
  }
  text(root, 2, 10, t.peak, "bar-label");
  text(root, 2, h + 14, "0", "bar-label");
  text(root, w - 2, h + 14, t.end, "bar-label").setAttribute("text-anchor", "end");
  root.setAttribute("viewBox", `0 0 ${w} ${h + 18}`);
}

/**
 * What the chart shows for the selection: its title, machine, active state ids (outermost
 * first) and current state. A rank group's machines run where its rank job runs: their
 * states come in the group's reports (a state, or a dotted path for a nested one).
 */
function chartView() {
  if (selected?.actor !== undefined) {
    const actor = state.actors[selected.actor];
    return (
      actor && {
        title: `${actor.label} (${actor.machine})`,
        machine: actor.machine,
        states: actor.states,
        now: leafName(actor),
      }
    );
  }
  const group = selected && state.groups[selected.group];
  if (!group) return undefined;
  const view = (title, machine, path) => {
    const keys = path.split(".");
    return {
      title: `${title} (${machine})`,
      machine,
      states: keys.map((_, i) => [machine, ...keys.slice(0, i + 1)].join(".")),
      now: path,
    };
  };
  if (selected.part === "group") return view(group.id, "group", group.state);
  if (selected.part === "teardown") {
    return group.teardown && view(`teardown of ${group.id}`, "teardown", group.teardown);
  }
  const rank = group.ranks[selected.part];
  return rank && view(`rank ${selected.part} of ${group.id}`, "rank", rank.phase);
}

/**
 * Squeezes a chart's text into the room the layout kept for it when this browser's font
 * draws it wider: the layout only estimates widths, and a wider font would spill the text
 * over its neighbours.
 */
function fitText(t, room) {
  if (t.getComputedTextLength() <= room) return;
  t.setAttribute("textLength", room);
  t.setAttribute("lengthAdjust", "spacingAndGlyphs");
}

function drawChart() {
  const root = $("chart");
  root.replaceChildren();
  const actor = chartView();
  const list = $("handlers");
  list.replaceChildren();
  if (!actor) {
    $("chart-title").textContent = "select an actor";
    return;
  }
  const chart = state.charts[actor.machine];
  $("chart-title").textContent = `${actor.title}: ${actor.now}`;
  root.dataset.machine = actor.machine;
  if (!chart) return;
  const active = new Set(actor.states);
  const defs = svg("defs", {}, root);
  const marker = svg(
    "marker",
    {
      id: "arrow",
      viewBox: "0 0 10 10",
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: "auto",
    },
    defs,
  );
  svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#57606a" }, marker);
  for (const s of chart.states) {
    const g = svg(
      "g",
      { class: `state ${s.type}${active.has(s.id) ? " active" : ""}`, "data-state": s.id },
      root,
    );
    svg("rect", { x: s.x, y: s.y, width: s.w, height: s.h, rx: 8 }, g);
    const compound = s.type === "compound" || s.type === "parallel";
    const name = text(
      g,
      s.x + (compound ? 8 : s.w / 2),
      s.y + (compound ? 15 : s.h / 2 + 4),
      s.key,
    );
    name.setAttribute("text-anchor", compound ? "start" : "middle");
    fitText(name, s.room);
  }
  for (const e of chart.edges) {
    svg("path", { d: e.path, class: "edge", "marker-end": "url(#arrow)" }, root);
    const t = text(root, e.labelX, e.labelY, e.text, "edge-label");
    t.setAttribute("text-anchor", e.anchor);
    svg("title", {}, t).textContent = e.label;
    fitText(t, e.room);
  }
  root.setAttribute("viewBox", `-10 -10 ${chart.width + 20} ${chart.height + 20}`);
  const scale = Math.min(1.3, root.clientWidth / (chart.width + 20));
  root.style.height = `${Math.round(Math.min(760, Math.max(200, (chart.height + 20) * scale)))}px`;
  // The machine's own (root) transitions first: they are handled in every state.
  for (const id of [chart.machine, ...actor.states]) {
    const where = id === chart.machine ? "in every state" : id.split(".").slice(1).join(".");
    for (const handler of chart.handlers[id] || []) {
      const li = document.createElement("li");
      li.textContent = `${where}: ${handler}`;
      list.appendChild(li);
    }
  }
}

// How long the page waits before it tries again after a cut, doubling up to the last.
const RECONNECT_MS = [500, 1000, 2000, 5000];
let attempts = 0;

function connect() {
  const url = new URL("ws", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url);
  ws.onopen = () => {
    attempts = 0;
    // A replay's page comes back to the step it showed (a new connection starts at the first).
    if (replay?.position > 0) seek(replay.position);
  };
  ws.onmessage = (message) => {
    const data = JSON.parse(message.data);
    if (data.type === "snapshot") {
      state = data.state;
      replay = data.replay;
      $("replay").hidden = !replay;
    } else if (data.type === "diff" && state) {
      applyDiff(data.diff);
    }
    if (!state) return;
    // The coordinator's chart until another actor is picked, whenever the coordinator appears.
    if (!selected && state.actors.coordinator) selected = { actor: "coordinator" };
    scheduleDraw();
  };
  // baton closes with why (1001, "baton stopped serving the dashboard"), and the page stops
  // there. A cut has no reason (a network blip, a laptop waking up): the page tries again, and
  // the snapshot it gets then brings it up to date; it says so meanwhile.
  ws.onclose = (event) => {
    const status = $("status");
    const wait = RECONNECT_MS[Math.min(attempts, RECONNECT_MS.length - 1)];
    const why = event.reason || `disconnected; trying again in ${wait / 1000} s`;
    status.textContent = state?.finished ? `${status.dataset.outcome} · ${why}` : why;
    if (event.reason) return;
    attempts++;
    setTimeout(connect, wait);
  };
  const seek = (position) => ws.send(JSON.stringify({ type: "seek", position }));
  $("first").onclick = () => seek(0);
  $("back").onclick = () => seek(replay.position - 1);
  $("forward").onclick = () => seek(replay.position + 1);
  $("last").onclick = () => seek(replay.length);
  $("to-violation").onclick = () => seek(replay.violationAt);
  $("slider").oninput = (event) => seek(Number(event.target.value));
}

connect();
