/* Trade-off page: the sweep of the current cluster state as a Plotly 3D scatter (throughput x
   power x Jain fairness), the current operating point, and preview / apply of the energy
   weight settings. The sweep is solved by Celery workers; the page polls until it is complete
   and reloads it when live.js reports a change of jobs or settings. */
(function () {
  "use strict";
  var G = window.GoghDash;
  var plot = document.getElementById("tradeoff-plot");
  var form = document.getElementById("tradeoff-form");
  var message = document.getElementById("tradeoff-message");
  var sweep = null, preview = null, pollTimer = null, reloadTimer = null;

  function pointText(p) {
    return "weight " + p.energy_weight + ", fairness " + (p.fairness_on ? "on" : "off") + "<br>" + p.placed + " jobs placed";
  }

  function draw() {
    var points = sweep ? sweep.points : [];
    var current = sweep ? sweep.current : null;
    var traces = [
      {
        type: "scatter3d", mode: "markers", name: "sweep",
        x: points.map(function (p) { return p.throughput; }),
        y: points.map(function (p) { return p.power_w; }),
        z: points.map(function (p) { return p.jain; }),
        text: points.map(pointText), hovertemplate: "%{text}<br>%{x:.2f} steps/s, %{y:.0f} W, Jain %{z:.3f}<extra></extra>",
        marker: {
          size: 6, symbol: points.map(function (p) { return p.fairness_on ? "square" : "circle"; }),
          color: points.map(function (p) { return Math.log10(p.energy_weight); }), colorscale: "Viridis",
          colorbar: { title: { text: "log10 weight" }, thickness: 12 },
        },
      },
      {
        type: "scatter3d", mode: "markers", name: "now",
        x: current ? [current.throughput] : [], y: current ? [current.power_w] : [], z: current ? [current.fairness] : [],
        marker: { size: 9, symbol: "diamond", color: "#d7372a" },
        hovertemplate: "now: %{x:.2f} steps/s, %{y:.0f} W, Jain %{z:.3f}<extra></extra>",
      },
      {
        type: "scatter3d", mode: "markers", name: "preview",
        x: preview ? [preview.proposed.throughput] : [], y: preview ? [preview.proposed.power_w] : [],
        z: preview ? [preview.proposed.fairness] : [],
        marker: { size: 9, symbol: "cross", color: "#111" },
        hovertemplate: "preview: %{x:.2f} steps/s, %{y:.0f} W, Jain %{z:.3f}<extra></extra>",
      },
    ];
    var layout = {
      margin: { t: 0, r: 0, b: 0, l: 0 }, legend: { orientation: "h" }, uirevision: "keep-camera",
      scene: { xaxis: { title: { text: "throughput (steps/s)" } }, yaxis: { title: { text: "power (W)" } },
               zaxis: { title: { text: "Jain fairness" }, range: [0, 1.05] } },
    };
    Plotly.react(plot, traces, layout, { responsive: true, displaylogo: false });
  }

  function load() {
    clearTimeout(pollTimer);
    G.api("GET", "/dashboard/api/tradeoff/").then(function (result) {
      var status = document.getElementById("sweep-status");
      if (result.status !== 200) {
        status.textContent = "The sweep could not be loaded: " + G.errorText(result.data);
        return;
      }
      sweep = result.data;
      plot.dataset.sweep = sweep.sweep;
      plot.dataset.complete = sweep.complete;
      status.textContent = sweep.complete
        ? sweep.points.length + " points; surplus valued at " + sweep.surplus_value_w + " W per unit over T_min."
        : "Solving the sweep: " + sweep.points.length + " of " + sweep.points_expected + " points...";
      draw();
      if (!sweep.complete) pollTimer = setTimeout(load, 1500);
    });
  }

  function settings() {
    return {
      base_energy_weight: Number(document.getElementById("weight").value),
      adaptive_weight: document.getElementById("adaptive").checked,
      load_window: Number(document.getElementById("load-window").value),
      throughput_value_w: Number(document.getElementById("surplus").value),
    };
  }

  function signed(value, digits, unit) {
    return (value >= 0 ? "+" : "") + value.toFixed(digits) + unit;
  }

  function showPreview(data) {
    var summary = document.getElementById("preview-summary");
    var now = data.current, next = data.proposed;
    summary.textContent = "With weight " + data.energy_weight.toFixed(3) + " (" + data.status + ", " + data.seconds.toFixed(2) + " s): power " +
      now.power_w.toFixed(0) + " W -> " + next.power_w.toFixed(0) + " W (" + signed(next.power_w - now.power_w, 0, " W") + "), throughput " +
      now.throughput.toFixed(2) + " -> " + next.throughput.toFixed(2) + " steps/s (" + signed(next.throughput - now.throughput, 2, "") +
      "), Jain " + now.fairness.toFixed(3) + " -> " + next.fairness.toFixed(3) + ", " + next.placed + " jobs placed.";
    var list = document.getElementById("moves");
    var items = data.moves.map(function (m) {
      var text = m.kind === "place" ? "job " + m.job + " would be placed on GPUs " + m.to_gpus.join(", ")
        : m.kind === "preempt" ? "job " + m.job + " would go back to pending (from GPUs " + m.from_gpus.join(", ") + ")"
        : "job " + m.job + " would move from GPUs " + m.from_gpus.join(", ") + " to " + m.to_gpus.join(", ");
      return G.el("li", { "data-job": m.job, "data-kind": m.kind }, [text]);
    });
    if (!items.length) items.push(G.el("li", { class: "none" }, ["No job would move."]));
    if (data.hidden_moves) items.push(G.el("li", { class: "none" }, [data.hidden_moves + " job(s) of other tenants would move."]));
    list.replaceChildren.apply(list, items);
  }

  document.getElementById("weight").addEventListener("input", function (event) {
    document.getElementById("weight-value").textContent = event.target.value;
  });

  document.getElementById("preview").addEventListener("click", function () {
    message.textContent = "Solving the preview...";
    message.className = "form-message";
    G.api("POST", "/dashboard/api/tradeoff/preview/", settings()).then(function (result) {
      if (result.status !== 200) {
        message.textContent = G.errorText(result.data);
        message.className = "form-message error";
        return;
      }
      message.textContent = "";
      preview = result.data;
      plot.dataset.previews = Number(plot.dataset.previews || 0) + 1;
      showPreview(preview);
      draw();
    });
  });

  var apply = document.getElementById("apply");
  if (apply) {
    apply.addEventListener("click", function () {
      G.api("POST", "/dashboard/api/tradeoff/apply/", settings()).then(function (result) {
        message.textContent = result.status === 200 ? "Applied: the next round uses these settings." : G.errorText(result.data);
        message.className = "form-message " + (result.status === 200 ? "ok" : "error");
      });
    });
  }

  form.addEventListener("submit", function (event) { event.preventDefault(); });

  draw();
  load();
  G.live({
    onEvent: function (ev) {
      if (ev.kind !== "job" && ev.kind !== "solver_config" && ev.kind !== "node") return;
      clearTimeout(reloadTimer);
      reloadTimer = setTimeout(load, 2000);  // a burst of changes, one reload
    },
  });
})();
