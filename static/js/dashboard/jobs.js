/* Jobs page: submit and cancel through the REST API (session + CSRF), and the table kept
   current from live.js's job state (same dict shape as the server-rendered rows). */
(function () {
  "use strict";
  var G = window.GoghDash;
  var ACTIVE = { pending: true, placed: true, running: true };
  var tbody = document.querySelector("#jobs-table tbody");

  function placementText(p) {
    if (!p) return "-";
    var partners = p.partner_job_ids || [];
    var text = p.num_gpus + " x " + p.gpu_type +
      (partners.length ? ", with job" + (partners.length > 1 ? "s " : " ") + partners.join(", ") : "");
    return [text + " ", G.el("small", {}, [(p.nodes || []).join(", ")])];
  }

  function row(job) {
    var state = [G.el("span", { class: "badge state-" + job.state }, [job.state])];
    if (job.pending_reason) state.push(G.el("div", { class: "reason" }, [job.pending_reason]));
    var progress = job.progress || {};
    var cancel = ACTIVE[job.state] ? G.el("button", { type: "button", class: "cancel", "data-cancel": job.id }, ["Cancel"]) : null;
    var placement = placementText(job.placement);
    return G.el("tr", { "data-job": job.id, "data-state": job.state }, [
      G.el("td", {}, [String(job.id)].concat(job.name ? [" ", G.el("small", {}, [job.name])] : [])),
      G.el("td", {}, [job.workload]),
      G.el("td", {}, [job.tenant]),
      G.el("td", {}, state),
      G.el("td", {}, Array.isArray(placement) ? placement : [placement]),
      G.el("td", {}, [G.fmt(job.predicted_throughput) + " / " + G.fmt(job.observed_throughput) + " / " + G.fmt(job.min_throughput)]),
      G.el("td", {}, [G.el("span", { class: "badge slo-" + job.slo }, [job.slo])]),
      G.el("td", {}, [String(progress.steps_done || 0) + (progress.total_steps ? " / " + progress.total_steps : "")]),
      G.el("td", {}, [cancel]),
    ]);
  }

  function order(a, b) {
    var activeA = ACTIVE[a.state] ? 0 : 1, activeB = ACTIVE[b.state] ? 0 : 1;
    if (activeA !== activeB) return activeA - activeB;
    if (activeA === 0 && a.priority !== b.priority) return b.priority - a.priority;
    return activeA === 0 ? a.id - b.id : b.id - a.id;
  }

  function render(state) {
    var jobs = Object.keys(state.job || {}).map(function (key) { return state.job[key]; }).sort(order);
    tbody.replaceChildren.apply(tbody, jobs.length ? jobs.map(row) : [G.el("tr", { class: "empty" }, [G.el("td", { colspan: 9 }, ["No jobs yet."])])]);
  }

  tbody.addEventListener("click", function (event) {
    var id = event.target.getAttribute && event.target.getAttribute("data-cancel");
    if (!id) return;
    event.target.disabled = true;
    G.api("POST", "/api/jobs/" + id + "/cancel/", {}).then(function (result) {
      if (result.status !== 200) {
        event.target.disabled = false;
        window.alert(G.errorText(result.data));
      }
    });
  });

  var form = document.getElementById("submit-form");
  if (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var body = {};
      new FormData(form).forEach(function (value, key) {
        if (value === "") return;
        body[key] = key === "workload" ? value : Number(value);
      });
      var message = document.getElementById("submit-message");
      message.textContent = "Submitting...";
      G.api("POST", "/api/jobs/", body).then(function (result) {
        message.textContent = result.status === 201 ? "Submitted job " + result.data.id + "." : G.errorText(result.data);
        message.className = "form-message " + (result.status === 201 ? "ok" : "error");
      });
    });
  }

  G.live({ onState: render, onEvent: function (ev, state) { if (ev.kind === "job") render(state); } });
})();
