/* Predictions page: validation MAE per version over time, and the catalog coverage heatmap
   (measured / predicted / unknown) for the chosen GPU type. */
(function () {
  "use strict";
  var G = window.GoghDash;
  var config = { responsive: true, displaylogo: false };
  function drawMae(series) {
    Plotly.react("mae-plot", Object.keys(series).map(function (name) {
      return { type: "scatter", mode: "lines+markers", name: name.toUpperCase(),
               x: series[name].map(function (p) { return p[0]; }), y: series[name].map(function (p) { return p[1]; }) };
    }), { margin: { t: 10, r: 10, b: 40, l: 50 }, yaxis: { title: { text: "rho MAE" } } }, config);
  }
  drawMae(G.json("mae-data") || {});

  /* Versions table and MAE series from the live predictor_version state. */
  function drawVersions(versions) {
    var list = Object.keys(versions).map(function (k) { return versions[k]; });
    var series = {};
    list.slice().sort(function (a, b) { return a.created_at < b.created_at ? -1 : 1; }).forEach(function (v) {
      if (v.val_mae !== null && v.val_mae !== undefined) (series[v.name] = series[v.name] || []).push([v.created_at, v.val_mae]);
    });
    drawMae(series);
    var tbody = document.querySelector("#versions-table tbody");
    var rows = list.sort(function (a, b) { return b.id - a.id; }).map(function (v) {
      return G.el("tr", { "data-version": v.id }, [
        G.el("td", {}, ["#" + v.id]), G.el("td", {}, [v.name.toUpperCase()]), G.el("td", {}, [v.architecture]),
        G.el("td", {}, [G.el("span", { class: "badge state-" + v.status }, [v.status])]),
        G.el("td", {}, [G.fmt(v.val_mae, 4)]), G.el("td", {}, [(v.created_at || "").slice(0, 16).replace("T", " ")]),
        G.el("td", {}, [v.note || ""]),
      ]);
    });
    if (rows.length) tbody.replaceChildren.apply(tbody, rows);
  }

  var coverage = G.json("coverage-data");
  var select = document.getElementById("coverage-type");
  function drawCoverage() {
    var grid = coverage.by_type[select.value] || [];
    Plotly.react("coverage-plot", [{
      type: "heatmap", z: grid, x: coverage.partners, y: coverage.workloads, zmin: 0, zmax: 2,
      colorscale: [[0, "#e4e7ee"], [0.33, "#e4e7ee"], [0.34, "#e8a33d"], [0.66, "#e8a33d"], [0.67, "#2a8a4a"], [1, "#2a8a4a"]],
      colorbar: { tickvals: [0, 1, 2], ticktext: ["unknown", "predicted", "measured"] },
      hovertemplate: "%{y} with %{x}: %{z}<extra></extra>",
    }], { margin: { t: 10, r: 10, b: 140, l: 200 }, xaxis: { tickangle: -60, automargin: true }, yaxis: { automargin: true } }, config);
  }
  if (select && select.value) {
    select.addEventListener("change", drawCoverage);
    drawCoverage();
  }
  G.live({
    onState: function (state) { drawVersions(state.predictor_version || {}); },
    onEvent: function (ev, state) { if (ev.kind === "predictor_version") drawVersions(state.predictor_version || {}); },
  });
})();
