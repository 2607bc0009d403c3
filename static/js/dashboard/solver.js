/* Solver page: the rounds table and the settings drawn from live.js's state, the same window
   as the server-rendered rows (the newest GOGH_LIVE_SOLVE_RUNS_KEPT rounds by id), so rounds
   added or dropped while the page was away (a resync) show too. */
(function () {
  "use strict";
  var G = window.GoghDash;
  var tbody = document.querySelector("#runs-table tbody");

  function row(run) {
    return G.el("tr", { "data-run": run.id }, [
      G.el("td", {}, [String(run.id)].concat(run.dry_run ? [" ", G.el("small", {}, ["dry run"])] : [])),
      G.el("td", {}, [run.started_at ? run.started_at.slice(11, 19) : "-"]),
      G.el("td", {}, [run.trigger]),
      G.el("td", {}, [run.solver]),
      G.el("td", {}, [G.el("span", { class: "badge state-" + run.status }, [run.status])]),
      G.el("td", {}, [G.fmt(run.duration_s, 3) + " s"]),
      G.el("td", {}, [G.fmt(run.objective, 1)]),
      G.el("td", {}, [G.fmt(run.gap, 4)]),
      G.el("td", {}, [G.fmt(run.power_w, 0) + " W"]),
      G.el("td", {}, [(run.num_placed || 0) + " / " + (run.num_jobs || 0)]),
      G.el("td", {}, [G.fmt(run.energy_weight, 3)]),
      G.el("td", {}, [run.fallback_reason || ""]),
    ]);
  }

  /* Current settings follow solver_config events (field names as stored). */
  function drawConfig(configs) {
    var config = configs[Object.keys(configs)[0]];
    if (!config) return;
    var tbody = document.querySelector("#config-table tbody");
    tbody.replaceChildren.apply(tbody, Object.keys(config).filter(function (k) { return k !== "id"; }).map(function (key) {
      return G.el("tr", {}, [G.el("th", {}, [key.replace(/_/g, " ")]), G.el("td", {}, [String(config[key])])]);
    }));
  }

  var kept = G.json("runs-kept") || 50;

  function drawRuns(runs) {
    var list = Object.keys(runs).map(function (k) { return Object.assign({ id: Number(k) }, runs[k]); })
      .sort(function (a, b) { return b.id - a.id; }).slice(0, kept);
    tbody.replaceChildren.apply(tbody, list.length ? list.map(row) : [G.el("tr", {}, [G.el("td", { colspan: 12 }, ["No round yet."])])]);
  }

  G.live({
    onState: function (state) {
      drawRuns(state.solve_run || {});
      drawConfig(state.solver_config || {});
    },
    onEvent: function (ev, state) {
      if (ev.kind === "solver_config") drawConfig(state.solver_config || {});
      if (ev.kind === "solve_run") drawRuns(state.solve_run || {});
    },
  });
})();
