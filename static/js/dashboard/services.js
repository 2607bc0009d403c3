/* Services page: the table and one chart per service, drawn from live.js's state of the
   `service` kind (scheduler/serving/live.py): a replica's traffic report, a round's plan and a
   replica placed, moved, started or ended each send its service's whole row, traffic included,
   so the page only redraws what it holds. The server renders the same table (services.html). */
(function () {
  "use strict";
  var G = window.GoghDash;
  var data = G.json("services-data") || { services: {}, chart_hours: 6 };
  var tbody = document.querySelector("#services-table tbody");
  var charts = document.getElementById("service-charts");

  function sorted(services) {
    return Object.keys(services || {}).map(function (k) { return services[k]; }).sort(function (a, b) {
      return a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id;
    });
  }

  /* "42.0 / 50.0 ms" and a marker: over (the reported P99 breaks the bound), under, or no report. */
  function latency(s) {
    var bound = G.fmt(s.latency_bound_ms, 1) + " ms ";
    if (s.p99_ms === null) return ["- / " + bound, G.el("span", { class: "badge" }, ["no report"])];
    var marker = s.over_bound ? G.el("span", { class: "badge slo-violated" }, ["over"])
      : G.el("span", { class: "badge slo-met" }, ["under"]);
    return [G.fmt(s.p99_ms, 1) + " / " + bound, marker];
  }

  function placement(replicas) {
    if (!replicas.length) return ["-"];
    var parts = [];
    replicas.forEach(function (r, i) {
      parts.push("job " + r.job_id + " ", G.el("span", { class: "badge state-" + r.state }, [r.state]));
      r.gpus.forEach(function (g) { parts.push(" " + g.gpu_type + " on " + g.node); });
      if (i < replicas.length - 1) parts.push("; ");
    });
    return parts;
  }

  function partners(list) {
    return list.length ? list.map(function (p) { return "job " + p.job_id + " " + p.workload + " (" + p.kind + ")"; }).join(", ") : "-";
  }

  function row(s) {
    return G.el("tr", { "data-service": s.id }, [
      G.el("td", { class: "name" }, [s.name, " ", G.el("small", {}, [s.workload]), " ", G.el("small", {}, [s.tenant])]),
      G.el("td", { class: "traffic" }, [G.fmt(s.request_rate_rps, 1) + " ", G.el("small", {}, ["(" + G.fmt(s.forecast_rps, 1) + ")"])]),
      G.el("td", { class: "p99" }, latency(s)),
      G.el("td", { class: "replicas" }, [s.replicas_target + " / " + s.replicas_live + " ",
        G.el("small", {}, ["(" + s.min_replicas + "-" + s.max_replicas + ")"])]),
      G.el("td", { class: "placement" }, placement(s.replicas)),
      G.el("td", { class: "partners" }, [partners(s.partners)]),
      G.el("td", { class: "tmin" }, [s.replica_min_throughput === null ? "-" : G.fmt(s.replica_min_throughput, 2) + " steps/s"]),
      G.el("td", { class: "note" }, [s.slo_note]),
    ]);
  }

  function drawTable(services) {
    var rows = sorted(services).map(row);
    tbody.replaceChildren.apply(tbody, rows.length ? rows : [G.el("tr", {}, [G.el("td", { colspan: 8 }, ["No active service you can see."])])]);
  }

  /* One figure per service, in the table's order; a figure whose service left is removed. */
  function figures(services) {
    var list = sorted(services);
    var kept = {};
    list.forEach(function (s) {
      var figure = charts.querySelector('figure[data-service="' + s.id + '"]');
      if (!figure) {
        figure = G.el("figure", { class: "service-chart", "data-service": s.id }, [
          G.el("figcaption", {}, [s.name]),
          G.el("div", { id: "service-plot-" + s.id, class: "plot small", role: "img", "aria-label": "Request rate and P99 of " + s.name }),
        ]);
      }
      charts.appendChild(figure);  // moves an existing one into order
      kept[s.id] = true;
    });
    Array.prototype.slice.call(charts.querySelectorAll("figure[data-service]")).forEach(function (figure) {
      if (!kept[figure.dataset.service]) charts.removeChild(figure);
    });
    return list;
  }

  function drawChart(s) {
    var x = s.traffic.map(function (p) { return p.at; });
    var now = new Date(), start = new Date(now.getTime() - data.chart_hours * 3600 * 1000);
    var traces = [
      { type: "scatter", mode: "lines+markers", name: "requests/s", x: x, y: s.traffic.map(function (p) { return p.rate_rps; }) },
      { type: "scatter", mode: "lines+markers", name: "P99 ms", yaxis: "y2", x: x,
        y: s.traffic.map(function (p) { return p.p99_ms; }) },
      { type: "scatter", mode: "lines", name: "bound ms", yaxis: "y2", line: { dash: "dash" },
        x: [start.toISOString(), now.toISOString()], y: [s.latency_bound_ms, s.latency_bound_ms] },
    ];
    window.Plotly.react("service-plot-" + s.id, traces, {
      margin: { t: 10, r: 60, b: 40, l: 60 }, legend: { orientation: "h" },
      xaxis: { type: "date", range: [start.toISOString(), now.toISOString()] },
      yaxis: { title: { text: "requests/s" }, rangemode: "tozero" },
      yaxis2: { title: { text: "ms" }, overlaying: "y", side: "right", rangemode: "tozero" },
    }, { responsive: true, displaylogo: false });
  }

  function drawCharts(services) {
    var list = figures(services);
    if (window.Plotly) list.forEach(drawChart);
  }

  var current = data.services;
  var redrawCharts = G.throttledRedraw(function () { drawCharts(current); }, 1000);
  drawCharts(current);

  G.live({
    onState: function (state) {
      current = state.service || {};
      drawTable(current);
      redrawCharts();
    },
    onEvent: function (ev, state) {
      if (ev.kind !== "service") return;
      current = state.service || {};
      drawTable(current);
      redrawCharts();
    },
  });
})();
