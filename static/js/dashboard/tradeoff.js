/* Trade-off page: the sweep of the current cluster state as a Plotly 3D scatter (throughput x
   power x Jain fairness; with fewer than two tenants Jain's index is 1 everywhere and the chart
   is throughput x power in 2D), the current operating point, and preview / apply of the energy
   weight settings. The page asks for the sweep of the current state with a POST (the server
   creates it and sends its points to the Celery workers when the state is new), polls it
   read-only until it is complete or failed, and asks again (at most once per RELOAD_MS) when
   live.js reports a job changing state or GPUs, a node or GPU changing state, or the settings
   (job progress reports do not count). The form sends only the fields the user edited, and
   follows settings changed elsewhere in the fields the user has not touched. */
(function () {
  "use strict";
  var G = window.GoghDash;
  var plot = document.getElementById("tradeoff-plot");
  var form = document.getElementById("tradeoff-form");
  var message = document.getElementById("tradeoff-message");
  var sweep = null, preview = null, pollTimer = null, reloadTimer = null, lastLoad = 0, drawnNarrow = null;
  var requests = 0;  // sweep loads sent so far: an answer counts only when it belongs to the newest
  var POLL_MS = 1500, RELOAD_MS = 10000;
  var PREVIEW_PROMPT = document.getElementById("preview-summary").textContent;
  var stored = G.json("tradeoff-settings") || {};  // the live settings, as last heard from the server
  var settingsHeard = 0;  // settings events and applies heard so far

  /* By fairness weight, smallest first. A 3D marker is a text glyph: "x" is the emoji U+274C, which
     Debian's Chromium has no font for (an empty box); these are geometric shapes every font has. */
  var FAIRNESS_SYMBOLS = ["circle", "square", "diamond"];
  var NOW = { symbol: "circle-open", color: "#d7372a" }, PREVIEW = { symbol: "cross", color: "#111" };

  function pointText(p) {
    return "energy weight " + p.energy_weight + ", fairness weight " + p.fairness_weight + "<br>" + p.placed + " jobs placed" +
      (p.shared_by > 1 ? "<br>one marker with " + (p.shared_by - 1) + " other setting(s) at this point" : "");
  }

  /* Settings that give the same decision draw one marker, so a complete sweep says how many
     distinct points its points make, and why all may coincide (docs/dashboard.md). */
  function pointsText(sweep) {
    var n = sweep.points.length, distinct = sweep.distinct_points;
    if (distinct === n) return n + " points.";
    if (distinct === 1) {
      return n + " points, all at one operating point: every energy and fairness weight gives the same throughput, power " +
        "and fairness here (the jobs can be placed only one way, or moving placed jobs gains less than it costs).";
    }
    return n + " points at " + distinct + " distinct operating points (settings that give the same decision share a marker).";
  }

  function fairnessSymbols(points) {
    var weights = points.map(function (p) { return p.fairness_weight; })
      .filter(function (w, i, all) { return all.indexOf(w) === i; }).sort(function (a, b) { return a - b; });
    return points.map(function (p) { return FAIRNESS_SYMBOLS[weights.indexOf(p.fairness_weight) % FAIRNESS_SYMBOLS.length]; });
  }

  /* With fewer than two tenants Jain's index is 1 at every point: a third axis that never
     moves only costs readability, so the chart is throughput x power in 2D (also before the
     first sweep arrives: an empty SVG chart costs less than a WebGL scene). */
  function flat() { return !sweep || sweep.tenants < 2; }

  /* A phone-width chart: the colour bar goes under the chart, leaving its width to the scene. */
  function narrow() { return plot.clientWidth < 600; }

  function draw() {
    var points = sweep ? sweep.points : [];
    var current = sweep ? sweep.current : null;
    var two = flat(), small = narrow(), type = two ? "scatter" : "scatter3d", size = two ? 12 : 10;
    var colorbar = small
      ? { title: { text: "log10 weight", side: "top" }, orientation: "h", thickness: 10, len: 0.9, x: 0.5, y: 0, yanchor: "top", ypad: 0 }
      : { title: { text: "log10 weight", side: "right" }, thickness: 12, len: 0.8 };
    var unit = two ? "" : ", Jain %{z:.3f}";
    function trace(name, at, marker, hovertemplate, extra) {
      var t = { type: type, mode: "markers", name: name, marker: marker, hovertemplate: hovertemplate, x: [], y: [] };
      at.forEach(function (p) { t.x.push(p.throughput); t.y.push(p.power_w); });
      if (!two) t.z = at.map(function (p) { return p.fairness === undefined ? p.jain : p.fairness; });
      return Object.assign(t, extra || {});
    }
    var traces = [
      trace("sweep", points, {
        size: size, symbol: fairnessSymbols(points), line: { width: two ? 1 : 0, color: "#fff" },
        color: points.map(function (p) { return Math.log10(p.energy_weight); }), colorscale: "Viridis",
        colorbar: colorbar,
      }, "%{text}<br>%{x:.2f} steps/s, %{y:.0f} W" + unit + "<extra></extra>", { text: points.map(pointText) }),
      trace("now", current ? [current] : [], { size: size + 6, symbol: NOW.symbol, color: NOW.color, line: { width: 3, color: NOW.color } },
        "now: %{x:.2f} steps/s, %{y:.0f} W" + unit + "<extra></extra>"),
      trace("preview", preview ? [preview.proposed] : [], { size: size + 4, symbol: PREVIEW.symbol, color: PREVIEW.color },
        "preview: %{x:.2f} steps/s, %{y:.0f} W" + unit + "<extra></extra>"),
    ];
    var xTitle = { text: "throughput (steps/s)" }, yTitle = { text: "power (W)" };
    var layout = {
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" }, uirevision: two ? "flat" : "keep-camera",
      margin: { t: 30, r: 10, b: small ? 70 : 10, l: 10 },
    };
    if (two) {
      layout.xaxis = { title: xTitle, automargin: true, zeroline: false };
      layout.yaxis = { title: yTitle, automargin: true, zeroline: false };
    } else {
      /* The camera stands back from Plotly's default (1.25, 1.25, 1.25) so that the axis titles,
         drawn in the WebGL scene, stay inside the chart at 390 px as at 1280 px. */
      layout.scene = {
        xaxis: { title: xTitle }, yaxis: { title: yTitle }, zaxis: { title: { text: "Jain fairness" }, range: [0, 1.05] },
        camera: { eye: small ? { x: 2.1, y: 2.1, z: 1.3 } : { x: 1.7, y: 1.7, z: 1.1 } },
        domain: { x: [0, small ? 1 : 0.9], y: [0, 1] },
      };
    }
    plot.dataset.dimensions = two ? "2" : "3";
    drawnNarrow = small;
    document.getElementById("tradeoff-axes").textContent = !sweep ? ""
      : two ? (sweep.tenants ? "One tenant" : "No tenant") + " has active jobs: Jain's fairness is 1 at every point, so the chart shows throughput and power alone."
      : sweep.tenants + " tenants: height is Jain's fairness (1 = every tenant served alike).";
    Plotly.react(plot, traces, layout, { responsive: true, displaylogo: false });
  }

  /* `asked`: settingsHeard when the request left; a sweep answered after newer settings arrived
     (an event, this page's apply) carries older ones, and the form does not go back to them. */
  function show(result, asked) {
    var status = document.getElementById("sweep-status");
    var retry = document.getElementById("sweep-retry");
    if (result.status !== 200 && result.status !== 201) {
      status.textContent = "The sweep could not be loaded: " + G.errorText(result.data);
      retry.hidden = false;
      return;
    }
    sweep = result.data;
    if (asked === settingsHeard) takeSettings(sweep.settings);
    plot.dataset.sweep = sweep.sweep;
    plot.dataset.status = sweep.status;
    plot.dataset.complete = sweep.status === "complete";
    var assumption = " Surplus valued at " + sweep.surplus_value_w + " W per unit over T_min" +
      (sweep.settings.throughput_value_w > 0 ? " (the live setting)." : " (the sweep's assumption; the live setting is 0).");
    status.textContent = sweep.status === "complete" ? pointsText(sweep) + assumption
      : sweep.status === "failed" ? "The sweep failed: " + sweep.points.length + " of " + sweep.points_expected + " points solved" +
        (sweep.failed_points ? ", " + sweep.failed_points + " failed." : ", the others did not arrive in time.")
      : "Solving the sweep: " + sweep.points.length + " of " + sweep.points_expected + " points...";
    retry.hidden = sweep.status !== "failed";
    draw();
    if (sweep.status === "solving") pollTimer = setTimeout(poll, POLL_MS);
  }

  /* The sweep of the cluster as it is now (created, or retried when it failed). Only the answer
     to the newest request counts: a load or poll still in flight when a newer load leaves would
     otherwise show (and poll) the sweep of an older state after the current one. */
  function load() {
    clearTimeout(pollTimer);
    clearTimeout(reloadTimer);
    reloadTimer = null;
    lastLoad = Date.now();
    plot.dataset.loads = Number(plot.dataset.loads || 0) + 1;  // requests for the sweep (tests read it)
    var asked = settingsHeard, request = ++requests;
    G.api("POST", "/dashboard/api/tradeoff/", {}).then(function (result) {
      if (request === requests) show(result, asked);
    }, function () {
      if (request === requests) show({ status: 0, data: { detail: "the server did not answer." } }, asked);
    });
  }

  /* A poll that meets a passing failure (no answer, a 5xx, a 429) keeps the sweep on screen and
     asks again later: the sweep is still being solved, and the page must not stop following it. */
  function poll() {
    var asked = settingsHeard, request = requests;
    function again() { if (request === requests) pollTimer = setTimeout(poll, POLL_MS * 2); }
    G.api("GET", "/dashboard/api/tradeoff/" + sweep.sweep + "/").then(function (result) {
      if (request !== requests) return;
      if (result.status === 404) load();  // replaced meanwhile: ask for the current one
      else if (result.status === 429 || result.status >= 500) again();
      else show(result, asked);
    }, again);
  }

  /* Leading-edge throttle: reload now if the last load is RELOAD_MS old, else once when it is. */
  function reloadSoon() {
    if (reloadTimer) return;
    var wait = Math.max(0, lastLoad + RELOAD_MS - Date.now());
    if (wait === 0) load();
    else reloadTimer = setTimeout(load, wait);
  }

  /* The four settings. A number field reads as its number only when the browser finds it valid
     (an emptied field, or letters, read as "" and are an error, never 0); the weight's slider
     covers 0-4 and writes into the exact field, which takes any weight the API accepts. */
  function numberField(id, slider) {
    var input = document.getElementById(id);
    return {
      id: id, input: input,
      read: function () {
        if (input.validity.badInput || input.value.trim() === "") return { error: "Enter a number." };
        if (!input.validity.valid || !isFinite(input.valueAsNumber)) return { error: input.validationMessage || "Not a valid value." };
        return { value: input.valueAsNumber };
      },
      show: function (value) {
        input.value = String(value);
        if (slider) slider.value = String(value);  // the slider clamps to its range; the field stays exact
      },
    };
  }

  function checkboxField(id) {
    var input = document.getElementById(id);
    return {
      id: id, input: input,
      read: function () { return { value: input.checked }; },
      show: function (value) { input.checked = value; },
    };
  }

  var slider = document.getElementById("weight-slider");
  var FIELDS = {
    base_energy_weight: numberField("weight", slider),
    adaptive_weight: checkboxField("adaptive"),
    load_window: numberField("load-window"),
    throughput_value_w: numberField("surplus"),
  };
  var edited = {};  // fields the user has edited since they were last applied: the only ones sent

  /* The small text beside a field: its error ("-error") or a change made elsewhere ("-note"). */
  function beside(field, kind, text) {
    var node = document.getElementById(field.id + "-" + kind);
    if (!node) return;
    node.textContent = text;
    node.hidden = !text;
  }

  function edit(name) {
    edited[name] = true;
    beside(FIELDS[name], "error", "");
  }

  Object.keys(FIELDS).forEach(function (name) {
    ["input", "change"].forEach(function (type) {
      FIELDS[name].input.addEventListener(type, function () { edit(name); });
    });
  });
  FIELDS.base_energy_weight.input.addEventListener("input", function (event) {
    if (event.target.validity.valid && event.target.value !== "") slider.value = event.target.value;
  });
  slider.addEventListener("input", function () {
    FIELDS.base_energy_weight.input.value = slider.value;
    edit("base_energy_weight");
  });

  /* The fields the user edited, or null when one of them is not a valid value (each error is
     shown beside its field and nothing is sent). */
  function settings() {
    var body = {}, valid = true;
    Object.keys(FIELDS).forEach(function (name) {
      if (!edited[name]) return;
      var read = FIELDS[name].read();
      beside(FIELDS[name], "error", read.error || "");
      if (read.error) valid = false;
      else body[name] = read.value;
    });
    if (!valid) {
      message.textContent = "Correct the marked field: nothing was sent.";
      message.className = "form-message error";
    }
    return valid ? body : null;
  }

  /* New live settings (a solver_config event, a sweep, this page's apply): a field the user has
     not edited shows the new value; an edited one keeps the user's value and notes the change.
     True when any live value changed. */
  function takeSettings(live) {
    var any = false;
    if (!live) return any;
    Object.keys(FIELDS).forEach(function (name) {
      if (!(name in live)) return;
      var field = FIELDS[name], value = live[name], changed = value !== stored[name];
      any = any || changed;
      stored[name] = value;
      if (!edited[name]) {
        if (changed) field.show(value);
        beside(field, "note", "");
      } else if (changed) {
        var mine = field.read();
        beside(field, "note", mine.value === value ? "" : "Changed elsewhere to " + (value === true ? "on" : value === false ? "off" : value) + "; yours is not applied yet.");
      }
    });
    return any;
  }

  function signed(value, digits, unit) {
    return (value >= 0 ? "+" : "") + value.toFixed(digits) + unit;
  }

  /* "GPU 3 (v100, alone)", "GPUs 3, 4 (v100, shared with job 7)"; without a type, its GPUs alone. */
  function gpus(list, type, partners) {
    var where = (list.length === 1 ? "GPU " : "GPUs ") + list.join(", ");
    if (!type) return where;
    var sharing = !partners.length ? "alone" : "shared with job" + (partners.length > 1 ? "s " : " ") + partners.join(", ");
    return where + " (" + type + ", " + sharing + ")";
  }

  function figures(m) {
    return m.from_throughput.toFixed(2) + " -> " + m.to_throughput.toFixed(2) + " steps/s, " +
      m.from_power_w.toFixed(0) + " -> " + m.to_power_w.toFixed(0) + " W";
  }

  /* One line per job that would change: what changes (GPUs, sharing, configuration) and its
     predicted figures before and after, by the same predictions as the totals, so the lines add
     up to the difference between the two points. */
  function moveText(m) {
    var from = gpus(m.from_gpus, m.from_type, m.from_partners), to = gpus(m.to_gpus, m.to_type, m.to_partners);
    var what = m.kind === "place" ? "would be placed on " + to
      : m.kind === "preempt" ? "would go back to pending (from " + from + ")"
      : m.kind === "move" ? "would move from " + from + (m.from_type ? "" : " (no longer schedulable)") + " to " + to
      : m.kind === "share" ? "stays on its GPU but would share differently: " + from + " now, " + to + " then"
      : "stays on " + to + " with other predicted figures";
    return "job " + m.job + " " + what + ": " + figures(m) + ".";
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
      return G.el("li", { "data-job": m.job, "data-kind": m.kind }, [moveText(m)]);
    });
    if (!items.length && !data.hidden_moves) {
      items.push(G.el("li", { class: "none" }, ["No job would change GPUs or sharing: a round with these settings leaves the cluster as it is."]));
    }
    if (data.hidden_moves) {
      items.push(G.el("li", { class: "none", "data-hidden": data.hidden_moves }, [data.hidden_moves + " job(s) of other tenants would change: " +
        signed(data.hidden_change.throughput, 2, " steps/s") + ", " + signed(data.hidden_change.power_w, 0, " W") + "."]));
    }
    list.replaceChildren.apply(list, items);
  }

  /* A preview answers for the settings it was asked with; once the live settings change (this
     page's Apply, or elsewhere) it no longer says what a round would do, so it goes. */
  function clearPreview() {
    if (!preview) return;
    preview = null;
    document.getElementById("preview-summary").textContent = PREVIEW_PROMPT;
    document.getElementById("moves").replaceChildren();
    draw();
  }

  document.getElementById("preview").addEventListener("click", function () {
    var body = settings();
    if (!body) return;
    message.textContent = "Solving the preview...";
    message.className = "form-message";
    G.api("POST", "/dashboard/api/tradeoff/preview/", body).then(function (result) {
      if (result.status !== 200) {
        message.textContent = (result.status === 429 ? "Too many previews: " : "") + G.errorText(result.data);
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
      var body = settings();
      if (!body) return;
      G.api("POST", "/dashboard/api/tradeoff/apply/", body).then(function (result) {
        if (result.status === 200) {
          Object.keys(body).forEach(function (name) {
            if (FIELDS[name].read().value === body[name]) edited[name] = false;  // unless edited again meanwhile
          });
          settingsHeard += 1;
          takeSettings(result.data);
          clearPreview();
        }
        message.textContent = result.status === 200 ? "Applied: the next round uses these settings." : G.errorText(result.data);
        message.className = "form-message " + (result.status === 200 ? "ok" : "error");
      });
    });
  }

  form.addEventListener("submit", function (event) { event.preventDefault(); });

  document.getElementById("sweep-retry").addEventListener("click", load);

  /* What a job contributes to the sweep's state: its state and GPUs (not its progress). */
  var seen = {};
  function jobKey(job) { return job ? job.state + "|" + (job.placement ? job.placement.gpu_ids.join(",") : "") : "gone"; }
  function stateKey(kind, data) { return data ? (kind === "job" ? jobKey(data) : data.state) : "gone"; }

  function remember(state) {
    seen = {};
    ["job", "node", "gpu"].forEach(function (kind) {
      Object.keys(state[kind] || {}).forEach(function (key) { seen[kind + ":" + key] = stateKey(kind, state[kind][key]); });
    });
  }

  window.addEventListener("resize", function () { if (narrow() !== drawnNarrow) draw(); });
  draw();
  load();
  G.live({
    onState: function (state) {
      var first = !Object.keys(seen).length;
      remember(state);
      if (!first) reloadSoon();  // a resync: something may have changed while away
    },
    onEvent: function (ev) {
      plot.dataset.events = Number(plot.dataset.events || 0) + 1;  // live events seen (tests read it)
      if (ev.kind === "solver_config") {
        settingsHeard += 1;
        if (takeSettings(ev.data)) clearPreview();
        reloadSoon();
        return;
      }
      if (ev.kind !== "job" && ev.kind !== "node" && ev.kind !== "gpu") return;
      var id = ev.kind + ":" + ev.key, now = stateKey(ev.kind, ev.op === "delete" ? null : ev.data);
      if (seen[id] === now) return;
      seen[id] = now;
      reloadSoon();
    },
  });
})();
