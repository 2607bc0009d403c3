/* Cluster page: power and utilization per GPU as Plotly bars, the GPUs-by-type counts (with how
   the catalog knows each type: profiled, profiling k of n cases, ...) and the node table, all
   drawn from the live layer's GPU, node and gpu_type_profile dicts (the server renders the same
   dicts first), so a GPU or node that appears after load is shown too. A node says who manages it
   (its agent, or Slurm); a GPU a run GOGH did not submit holds (external_holder) is counted
   "held" by type and named under its node (selectors.cluster_overview does the same). The boards
   table shows each GPU's learnt speed, slow flag, health notes and power limit from the same live
   dicts; the power-curve chart (each fitted board curve beside its type's datasheet curve) is
   drawn once from the page's data: curves are refitted hourly, not per sample. */
(function () {
  "use strict";
  var G = window.GoghDash;
  var initial = G.json("cluster-data") || {};
  var STALE_MS = (initial.stale_s || 120) * 1000;  // the server's rule (GOGH_TELEMETRY_METRICS_STALE_S)
  var gpus = {}, nodes = {}, profiles = initial.profiles || {};
  (initial.gpus || []).forEach(function (g) { gpus[g.id] = g; });
  (initial.nodes || []).forEach(function (n) { nodes[n.id] = n; });
  // Bars on two y-axes are drawn on top of each other even with barmode "group"; an offsetgroup
  // per trace puts each GPU's power and utilization bars side by side.
  // The GPU labels are long and slanted: automargin grows the margins to hold them whole (the
  // last one ran past the right edge with fixed margins).
  var layout = {
    margin: { t: 10, r: 50, b: 40, l: 50 }, barmode: "group", legend: { orientation: "h", y: 1.12 },
    xaxis: { automargin: true },
    yaxis: { title: { text: "W" }, automargin: true },
    yaxis2: { title: { text: "utilization" }, overlaying: "y", side: "right", range: [0, 1], automargin: true },
  };

  var MANAGERS = { agent: "GOGH agent", slurm: "Slurm" };  // telemetry.models.NodeManager's labels

  function values(map) { return Object.keys(map).map(function (k) { return map[k]; }); }
  function held(g) { return g.external_holder && g.state !== "missing"; }
  function label(g) { return g.node + "/" + g.index; }
  /* scheduler.profiling.live.profile_label, for the live dicts. The snapshot holds every GPU type
     the catalog had when the page loaded; a type without a dict was created since (an agent
     brought it), so nothing has measured it yet: datasheet only, until its first campaign event. */
  function profileLabel(p) {
    if (!p) return "datasheet only";
    if (p.status === "profiling") return "profiling " + p.cases_settled + " of " + p.cases + " cases";
    return { profiled: "profiled", measured: "measured, not profiled", datasheet: "datasheet only" }[p.status] || "";
  }
  function byText(key) { return function (a, b) { return key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0; }; }

  function drawGpus() {
    var list = values(gpus).sort(byText(label));
    var fresh = function (g) { return g.sampled_at && Date.now() - Date.parse(g.sampled_at) <= STALE_MS; };
    var total = list.reduce(function (sum, g) { return sum + (fresh(g) ? g.power_w || 0 : 0); }, 0);
    document.getElementById("power-now").textContent = total.toFixed(0) + " W";
    var names = list.map(label);
    Plotly.react("gpu-plot", [
      { type: "bar", name: "power (W)", x: names, y: list.map(function (g) { return g.power_w; }), offsetgroup: "power", marker: { color: "#2a5bd7" } },
      { type: "bar", name: "utilization", x: names, y: list.map(function (g) { return g.utilization; }), yaxis: "y2", offsetgroup: "utilization", marker: { color: "#e8a33d" } },
    ], layout, { responsive: true, displaylogo: false });
    var types = {}, heldByType = {};
    list.forEach(function (g) {
      var states = (types[g.gpu_type] = types[g.gpu_type] || {});
      states[g.state] = (states[g.state] || 0) + 1;
      if (held(g)) heldByType[g.gpu_type] = (heldByType[g.gpu_type] || 0) + 1;
    });
    var rows = Object.keys(types).sort().map(function (type) {
      var badges = [];
      Object.keys(types[type]).sort().forEach(function (state) {
        badges.push(G.el("span", { class: "badge state-" + state }, [state + " " + types[type][state]]), " ");
      });
      if (heldByType[type]) {
        badges.push(G.el("span", { class: "badge state-held", title: "held by runs GOGH did not submit: nothing is planned on them" },
                         ["held " + heldByType[type]]));
      }
      return G.el("tr", {}, [G.el("td", {}, [type]), G.el("td", {}, badges), G.el("td", { class: "profile" }, [profileLabel(profiles[type])])]);
    });
    var tbody = document.querySelector("#gpu-type-table tbody");
    tbody.replaceChildren.apply(tbody, rows.length ? rows : [G.el("tr", {}, [G.el("td", { colspan: 3 }, ["No GPUs registered."])])]);
  }

  function drawNodes() {
    var list = values(nodes).sort(byText(function (n) { return n.hostname; }));
    var down = list.filter(function (n) { return n.state === "down"; }).length;
    var heldOn = {};
    values(gpus).filter(held).sort(function (a, b) { return a.index - b.index; }).forEach(function (g) {
      (heldOn[g.node_id] = heldOn[g.node_id] || []).push(g);
    });
    var rows = list.map(function (node) {
      var state = [G.el("span", { class: "badge state-" + node.state }, [node.state])];
      if (node.state_reason) state.push(" ", G.el("small", {}, [node.state_reason]));
      var gpuCell = [String(node.gpu_count)];
      (heldOn[node.id] || []).forEach(function (g) {
        gpuCell.push(" ", G.el("small", { class: "held" }, ["GPU " + g.index + " held by " + g.external_holder]));
      });
      return G.el("tr", { "data-node": node.id }, [
        G.el("td", {}, [node.hostname]), G.el("td", {}, state),
        G.el("td", { class: "managed-by" }, [MANAGERS[node.managed_by] || node.managed_by]), G.el("td", {}, gpuCell),
      ]);
    });
    var tbody = document.querySelector("#node-table tbody");
    tbody.replaceChildren.apply(tbody, rows.length ? rows : [G.el("tr", {}, [G.el("td", { colspan: 4 }, ["No nodes registered."])])]);
    document.getElementById("nodes-count").textContent = String(list.length);
    var counter = document.getElementById("nodes-down");
    counter.textContent = String(down);
    counter.parentNode.classList.toggle("bad", down > 0);
  }

  function drawBoards() {
    var list = values(gpus).filter(function (g) { return g.state !== "missing"; }).sort(byText(label));
    var rows = list.map(function (g) {
      var speed = g.speed_observations
        ? [g.speed_factor.toFixed(2) + " ", G.el("small", {}, ["(" + g.speed_observations + " measurements)"])]
        : [G.el("small", {}, ["not learnt yet"])];
      var flag = g.speed_flag ? [G.el("span", { class: "badge state-slow", title: g.speed_flag }, ["slow"])] : [];
      if (g.at_risk) flag.push(" ", G.el("span", { class: "badge state-slow", title: g.at_risk }, ["at risk"]));
      if (g.throttled_speed !== null && g.throttled_speed !== undefined) {
        flag.push(" ", G.el("span", { class: "badge state-slow", title: "planned at " + g.throttled_speed.toFixed(2) }, ["throttled"]));
      }
      var notes = [];
      (g.health_notes || []).forEach(function (note) { notes.push(G.el("small", { class: "note" }, [note]), " "); });
      var limit = g.power_limit_w === null || g.power_limit_w === undefined ? "default" : g.power_limit_w.toFixed(0) + " W";
      return G.el("tr", { "data-gpu": g.id }, [
        G.el("td", {}, [label(g)]), G.el("td", {}, [g.gpu_type]), G.el("td", { class: "speed" }, speed),
        G.el("td", { class: "flag" }, flag), G.el("td", { class: "health" }, notes), G.el("td", { class: "limit" }, [limit]),
      ]);
    });
    var tbody = document.querySelector("#board-table tbody");
    tbody.replaceChildren.apply(tbody, rows.length ? rows : [G.el("tr", {}, [G.el("td", { colspan: 6 }, ["No GPUs registered."])])]);
  }

  function drawCurves() {
    var curves = initial.power_curves || [];
    if (!curves.length || !document.getElementById("curve-plot")) return;
    var traces = [], datasheets = {};
    curves.forEach(function (c) {
      var limit = c.power_limit_w ? ", at " + c.power_limit_w.toFixed(0) + " W limit" : "";
      traces.push({
        type: "scatter", mode: "lines+markers", name: c.label + " (measured, ±" + c.residual_std_w.toFixed(0) + " W" + limit + ")",
        x: c.points.map(function (p) { return p[0]; }), y: c.points.map(function (p) { return p[1]; }),
      });
      datasheets[c.gpu_type] = c.datasheet;
    });
    Object.keys(datasheets).sort().forEach(function (type) {
      var pts = datasheets[type];
      traces.push({
        type: "scatter", mode: "lines", name: type + " (datasheet)", line: { dash: "dash", color: "#888" },
        x: pts.map(function (p) { return p[0]; }), y: pts.map(function (p) { return p[1]; }),
      });
    });
    Plotly.react("curve-plot", traces, {
      margin: { t: 10, r: 20, b: 40, l: 50 }, legend: { orientation: "h", y: 1.15 },
      xaxis: { title: { text: "utilization" }, range: [0, 1] }, yaxis: { title: { text: "W" }, rangemode: "tozero" },
    }, { responsive: true, displaylogo: false });
  }

  function copy(map) {
    var out = {};
    Object.keys(map || {}).forEach(function (key) { out[key] = map[key]; });
    return out;
  }

  // GPU events come several a second (each sample batch); the chart, counts and power follow
  // at most once a second, always ending on the newest state.
  var redrawGpus = G.throttledRedraw(function () { drawGpus(); drawBoards(); }, 1000);
  var redrawNodes = G.throttledRedraw(drawNodes, 1000);  // a GPU's holder is shown under its node
  redrawGpus();
  drawCurves();
  G.live({
    onState: function (state) {
      gpus = copy(state.gpu);
      nodes = copy(state.node);
      profiles = copy(state.gpu_type_profile);
      redrawGpus();
      drawNodes();
    },
    onEvent: function (ev, state) {
      if (ev.kind === "node") { nodes = copy(state.node); drawNodes(); }
      if (ev.kind === "gpu") { gpus = copy(state.gpu); redrawGpus(); redrawNodes(); }
      if (ev.kind === "gpu_type_profile") { profiles = copy(state.gpu_type_profile); redrawGpus(); }
    },
  });
})();
