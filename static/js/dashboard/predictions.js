/* Predictions page: validation MAE per version over time, and the catalog coverage heatmap
   (measured / predicted / unknown) for the chosen GPU type. */
(function () {
  "use strict";
  var G = window.GoghDash;
  var config = { responsive: true, displaylogo: false };
  var DAY_MS = 24 * 3600 * 1000;

  /* Dates on x, at least a day wide around the versions (Plotly would stretch one version's
     instant over a few milliseconds), and the error from 0 up (never from -0.5). */
  function maeLayout(series) {
    var times = [], top = 0;
    Object.keys(series).forEach(function (name) {
      series[name].forEach(function (p) { times.push(Date.parse(p[0])); top = Math.max(top, p[1]); });
    });
    var xaxis = { type: "date", automargin: true };
    if (times.length) {
      var first = Math.min.apply(null, times), last = Math.max.apply(null, times);
      var pad = Math.max(DAY_MS - (last - first), 0) / 2 + (last - first) * 0.05;
      xaxis.range = [new Date(first - pad).toISOString(), new Date(last + pad).toISOString()];
    }
    return {
      margin: { t: 10, r: 10, b: 40, l: 50 }, showlegend: true, xaxis: xaxis,
      yaxis: { title: { text: "rho MAE" }, range: [0, (top || 1) * 1.15], automargin: true },
    };
  }

  function drawMae(series) {
    Plotly.react("mae-plot", Object.keys(series).map(function (name) {
      return { type: "scatter", mode: "lines+markers", name: name.toUpperCase(), marker: { size: 8 },
               x: series[name].map(function (p) { return p[0]; }), y: series[name].map(function (p) { return p[1]; }) };
    }), maeLayout(series), config);
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
  // Every workload and partner is labelled (Plotly's automatic ticks dropped every other one):
  // one tick per row and column, rows ROW_PX high, columns at least COLUMN_PX wide (the plot
  // scrolls sideways inside its box on a phone rather than overprint the labels).
  var ROW_PX = 18, COLUMN_PX = 16, LABELS_PX = 200, BAR_PX = 120;
  function drawCoverage() {
    var grid = coverage.by_type[select.value] || [];
    var box = document.getElementById("coverage-plot");
    box.style.height = (coverage.workloads.length * ROW_PX + LABELS_PX) + "px";
    box.style.minWidth = (coverage.partners.length * COLUMN_PX + LABELS_PX + BAR_PX) + "px";
    var ticks = function (labels) { return { tickmode: "array", tickvals: labels, ticktext: labels, automargin: true, tickfont: { size: 11 } }; };
    Plotly.react("coverage-plot", [{
      type: "heatmap", z: grid, x: coverage.partners, y: coverage.workloads, zmin: 0, zmax: 2,
      colorscale: [[0, "#e4e7ee"], [0.33, "#e4e7ee"], [0.34, "#e8a33d"], [0.66, "#e8a33d"], [0.67, "#2a8a4a"], [1, "#2a8a4a"]],
      colorbar: { tickvals: [0, 1, 2], ticktext: ["unknown", "predicted", "measured"] },
      hovertemplate: "%{y} with %{x}: %{z}<extra></extra>",
    }], {
      margin: { t: 10, r: 10, b: 10, l: 10 },
      xaxis: Object.assign(ticks(coverage.partners), { tickangle: -60 }),
      yaxis: Object.assign(ticks(coverage.workloads), { autorange: "reversed" }),
    }, config);
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
