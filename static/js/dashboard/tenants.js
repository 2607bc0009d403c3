/* Tenants page: the table and the energy chart drawn from live.js's state. A tenant's own
   figures (shares, quotas, fair share, energy) follow the `tenant` kind; the GPUs it holds now
   follow the `job` and `gpu` kinds (its placed or running jobs' GPUs, one GPU counted once per
   tenant), as scheduler.tenancy.selectors.gpus_in_use counts them for the API. */
(function () {
  "use strict";
  var G = window.GoghDash;
  var data = G.json("tenants-data") || { tenants: {}, chart_days: 30 };
  var HOLDING = { placed: true, running: true };
  var tbody = document.querySelector("#tenants-table tbody");

  function values(objects) { return Object.keys(objects || {}).map(function (k) { return objects[k]; }); }
  function listed(counts) {
    var types = Object.keys(counts || {}).sort();
    return types.length ? types.map(function (t) { return t + " " + counts[t]; }).join(", ") : "-";
  }

  /* {tenant slug: {GPU type: GPUs held}} from the jobs and GPUs the page follows. */
  function inUse(jobs, gpus) {
    var held = {};
    values(jobs).forEach(function (job) {
      if (!HOLDING[job.state] || !job.placement) return;
      job.placement.gpu_ids.forEach(function (id) {
        var gpu = gpus[String(id)];
        if (!gpu) return;
        var mine = (held[job.tenant] = held[job.tenant] || {});
        (mine[gpu.gpu_type] = mine[gpu.gpu_type] || {})[id] = true;
      });
    });
    var counts = {};
    Object.keys(held).forEach(function (slug) {
      counts[slug] = {};
      Object.keys(held[slug]).forEach(function (type) { counts[slug][type] = Object.keys(held[slug][type]).length; });
    });
    return counts;
  }

  function borrowed(using, quotas) {
    var quota = {}, over = {};
    quotas.forEach(function (q) { quota[q.gpu_type] = q.gpus; });
    Object.keys(using).forEach(function (type) {
      var n = using[type] - (quota[type] || 0);
      if (n > 0) over[type] = n;
    });
    return over;
  }

  function row(t, using) {
    var month = G.fmt(t.energy.month_kwh, 2) +
      (t.energy_budget_kwh_month === null ? "" : " / " + G.fmt(t.energy_budget_kwh_month, 2)) + " kWh";
    var name = [t.name, " ", G.el("small", {}, [t.slug])].concat(t.may_borrow ? [] : [" ", G.el("small", {}, ["no borrowing"])]);
    return G.el("tr", { "data-tenant": t.slug }, [
      G.el("td", {}, name),
      G.el("td", { class: "shares" }, [String(t.shares)]),
      G.el("td", { class: "factor" }, [G.fmt(t.fair_share.factor, 3)]),
      G.el("td", { class: "quota" }, [listed(t.quotas.reduce(function (all, q) { all[q.gpu_type] = q.gpus; return all; }, {}))]),
      G.el("td", { class: "in-use" }, [listed(using)]),
      G.el("td", { class: "borrowed" }, [listed(borrowed(using, t.quotas))]),
      G.el("td", { class: "today" }, [G.fmt(t.energy.today_kwh, 2) + " kWh"]),
      G.el("td", { class: "month" }, [month].concat(t.energy.over_budget ? [" ", G.el("span", { class: "badge state-failed" }, ["over budget"])] : [])),
    ]);
  }

  function drawTable(tenants, held) {
    var list = values(tenants).sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
    var rows = list.map(function (t) { return row(t, held[t.slug] || {}); });
    tbody.replaceChildren.apply(tbody, rows.length ? rows : [G.el("tr", {}, [G.el("td", { colspan: 8 }, ["You belong to no tenant."])])]);
  }

  /* The last chart_days UTC days, oldest first, as YYYY-MM-DD. */
  function chartDays() {
    var days = [], today = new Date();
    for (var i = data.chart_days - 1; i >= 0; i--) {
      days.push(new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - i)).toISOString().slice(0, 10));
    }
    return days;
  }

  function drawChart(tenants) {
    if (!window.Plotly) return;
    var days = chartDays();
    var traces = values(tenants).sort(function (a, b) { return a.slug < b.slug ? -1 : 1; }).map(function (t) {
      var kwh = {};
      t.energy_days.forEach(function (d) { kwh[d.day] = d.energy_kwh; });
      return { type: "bar", name: t.slug, x: days, y: days.map(function (d) { return kwh[d] || 0; }) };
    });
    window.Plotly.react("energy-plot", traces, {
      barmode: "group", margin: { t: 10, r: 10, b: 40, l: 50 }, yaxis: { title: { text: "kWh" } },
      legend: { orientation: "h" },
    }, { responsive: true, displaylogo: false });
  }

  var redrawChart = G.throttledRedraw(function () { drawChart(current.tenant || {}); }, 1000);
  var current = { tenant: data.tenants };
  drawChart(data.tenants);

  G.live({
    onState: function (state) {
      current = state;
      drawTable(state.tenant || {}, inUse(state.job, state.gpu || {}));
      redrawChart();
    },
    onEvent: function (ev, state) {
      current = state;
      if (ev.kind === "tenant" || ev.kind === "job" || (ev.kind === "gpu" && ev.op === "delete")) {
        drawTable(state.tenant || {}, inUse(state.job, state.gpu || {}));
      }
      if (ev.kind === "tenant") redrawChart();
    },
  });
})();
