/* Solver page: new rounds appear at the top of the table as live.js reports them. */
(function () {
  "use strict";
  var G = window.GoghDash;
  var tbody = document.querySelector("#runs-table tbody");

  function row(run) {
    return G.el("tr", { "data-run": run.id }, [
      G.el("td", {}, [String(run.id)].concat(run.dry_run ? [" ", G.el("small", {}, ["dry run"])] : [])),
      G.el("td", {}, [run.started_at ? new Date(run.started_at).toLocaleTimeString() : "-"]),
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

  G.live({
    onEvent: function (ev, state) {
      if (ev.kind === "solver_config") drawConfig(state.solver_config || {});
      if (ev.kind !== "solve_run") return;
      var old = tbody.querySelector('tr[data-run="' + ev.key + '"]');
      if (ev.op === "delete") {
        if (old) old.remove();
        return;
      }
      var fresh = row(Object.assign({ id: ev.key }, ev.data));
      if (old) old.replaceWith(fresh);
      else tbody.insertBefore(fresh, tbody.firstChild);
    },
  });
})();
