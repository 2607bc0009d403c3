/* Cluster page: power and utilisation per GPU as Plotly bars, updated from live GPU state. */
(function () {
  "use strict";
  var G = window.GoghDash;
  var STALE_MS = 120000;  // as the server's "power now": samples older than this do not count
  var gpus = {};
  (G.json("gpus-data") || []).forEach(function (g) { gpus[g.id] = g; });
  var layout = {
    margin: { t: 10, r: 50, b: 90, l: 50 }, barmode: "group", legend: { orientation: "h", y: 1.12 },
    yaxis: { title: { text: "W" } }, yaxis2: { title: { text: "utilisation" }, overlaying: "y", side: "right", range: [0, 1] },
  };

  function label(g) { return g.name || (g.node + "/" + g.index); }

  function draw() {
    var list = Object.keys(gpus).map(function (k) { return gpus[k]; }).sort(function (a, b) { return label(a) < label(b) ? -1 : 1; });
    var names = list.map(label);
    var fresh = function (g) { return g.sampled_at && Date.now() - Date.parse(g.sampled_at) <= STALE_MS; };
    var total = list.reduce(function (sum, g) { return sum + (fresh(g) ? g.power_w || 0 : 0); }, 0);
    document.getElementById("power-now").textContent = total.toFixed(0) + " W";
    Plotly.react("gpu-plot", [
      { type: "bar", name: "power (W)", x: names, y: list.map(function (g) { return g.power_w; }), marker: { color: "#2a5bd7" } },
      { type: "bar", name: "utilisation", x: names, y: list.map(function (g) { return g.utilization; }), yaxis: "y2", marker: { color: "#e8a33d" } },
    ], layout, { responsive: true, displaylogo: false });
  }

  /* Nodes: state badges and the count of nodes down follow node events. */
  function drawNodes(nodes) {
    var down = 0;
    Object.keys(nodes).forEach(function (key) {
      var node = nodes[key];
      if (node.state === "down") down += 1;
      var row = document.querySelector('#node-table tr[data-node="' + key + '"]');
      if (!row) return;
      var cell = row.children[1];
      var parts = [G.el("span", { class: "badge state-" + node.state }, [node.state])];
      if (node.state_reason) parts.push(" ", G.el("small", {}, [node.state_reason]));
      cell.replaceChildren.apply(cell, parts);
      row.children[2].textContent = String(node.gpu_count);
    });
    var counter = document.getElementById("nodes-down");
    counter.textContent = String(down);
    counter.parentNode.classList.toggle("bad", down > 0);
  }

  draw();
  G.live({
    onState: function (state) {
      gpus = {};
      Object.keys(state.gpu || {}).forEach(function (key) { gpus[key] = state.gpu[key]; });
      draw();
      drawNodes(state.node || {});
    },
    onEvent: function (ev, state) {
      if (ev.kind === "node") drawNodes(state.node || {});
      if (ev.kind !== "gpu") return;
      if (ev.op === "delete") delete gpus[ev.key];
      else gpus[ev.key] = ev.data;
      draw();
    },
  });
})();
