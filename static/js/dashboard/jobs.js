/* Jobs page: submit and cancel through the REST API (session + CSRF), and the table kept
   current from live.js's job state (same dict shape as the server-rendered rows). */
(function () {
  "use strict";
  var G = window.GoghDash;
  var ACTIVE = { pending: true, placed: true, running: true };
  var tbody = document.querySelector("#jobs-table tbody");
  /* The jobs whose interruptions the user opened: kept open when the live layer redraws the rows. */
  var openInterruptions = {};

  function placementText(p) {
    if (!p) return "-";
    var partners = p.partner_job_ids || [];
    var text = p.num_gpus + " x " + p.gpu_type +
      (partners.length ? ", with job" + (partners.length > 1 ? "s " : " ") + partners.join(", ") : "");
    return [text + " ", G.el("small", {}, [(p.nodes || []).join(", ")])];
  }

  function plural(count, word) {
    return count + " " + word + (count === 1 ? "" : "s");
  }

  /* The marker's sentence, as templates/dashboard/job_restarts.txt words it. */
  function restartsText(job, p) {
    return plural(job.restarts, "restart") + ", " + plural(job.steps_lost || 0, "step") + " lost; " +
      (p.checkpoint_step === null || p.checkpoint_step === undefined ? "no checkpoint" : "last checkpoint at step " + p.checkpoint_step);
  }

  function interruptionItem(x) {
    var at = x.at ? x.at.slice(0, 10) + " " + x.at.slice(11, 19) + " UTC" : "-";
    var lost = x.was_running
      ? plural(x.steps_lost, "step") + " lost (stopped at " + x.steps_done + ", resumed at " + x.resume_step + ")."
      : "Not started: nothing lost.";
    return G.el("li", {}, [G.el("span", { class: "badge kind" }, [x.kind]), " " + at + ": " + x.reason + " " + lost]);
  }

  function interruptionsList(job) {
    var i = job.interruptions || { count: 0, results: [] };
    if (!i.count) return null;
    var details = G.el("details", { class: "interruptions", "data-interruptions": job.id, open: !!openInterruptions[job.id] }, [
      G.el("summary", {}, ["Interruptions (" + i.count + ")"]),
      G.el("ol", {}, i.results.map(interruptionItem)),
    ]);
    if (i.count > i.results.length) {
      details.appendChild(G.el("p", { class: "note" }, ["The newest " + i.results.length + " of " + i.count + "."]));
    }
    return details;
  }

  /* The Progress cell, as templates/dashboard/job_progress.html draws it: the current run's
     position, its best when a restart left it behind, the last checkpoint, the restart marker
     and the newest interruptions. */
  function progressCell(job) {
    var p = job.progress || {};
    var current = p.current_step || 0;
    var parts = [G.el("span", { class: "steps" }, [String(current) + (p.total_steps ? " / " + p.total_steps : "")])];
    if ((p.steps_done || 0) > current) {
      parts.push(" ", G.el("small", { class: "best", title: "The most steps the job reached" }, ["best " + p.steps_done]));
    }
    if (p.checkpoint_step !== null && p.checkpoint_step !== undefined) {
      parts.push(" ", G.el("small", { class: "checkpoint", title: "Last checkpoint at step " + p.checkpoint_step }, ["checkpoint " + p.checkpoint_step]));
    }
    if (job.restarts) {
      var sentence = restartsText(job, p);
      parts.push(" ", G.el("span", { class: "badge restarts", role: "img", title: sentence, "aria-label": sentence }, ["\u21bb " + job.restarts]));
    }
    parts.push(interruptionsList(job));
    return G.el("td", { class: "progress" }, parts);
  }

  function row(job) {
    var state = [G.el("span", { class: "badge state-" + job.state }, [job.state])];
    /* The probe marker, as templates/dashboard/jobs.html draws it: text, its sentence as its name. */
    if (job.probe) state.push(" ", G.el("span", { class: "badge probe", role: "img", title: job.probe.text, "aria-label": job.probe.text }, ["probe"]));
    if (job.pending_reason) state.push(G.el("div", { class: "reason" }, [job.pending_reason]));
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
      progressCell(job),
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

  tbody.addEventListener("toggle", function (event) {
    var id = event.target.getAttribute && event.target.getAttribute("data-interruptions");
    if (id) openInterruptions[id] = event.target.open;
  }, true);

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
