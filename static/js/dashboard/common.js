/* Shared helpers of the dashboard pages: JSON calls with the CSRF token, safe DOM building,
   number formatting, and the hook into live.js (GoghLive) when it is loaded. No framework. */
(function () {
  "use strict";
  var G = (window.GoghDash = {});

  G.csrfToken = function () {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  };

  /* api("POST", url, body) -> Promise of {status, data}; never rejects on an HTTP error. */
  G.api = function (method, url, body) {
    var options = { method: method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRFToken"] = G.csrfToken();
      options.body = JSON.stringify(body);
    }
    return fetch(url, options).then(function (response) {
      return response.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text.slice(0, 200) }; }
        return { status: response.status, data: data };
      });
    });
  };

  /* el("td", {class: "x"}, ["text", otherNode]) - text is always set as text, never as HTML. */
  G.el = function (tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (attrs[key] === null || attrs[key] === undefined || attrs[key] === false) return;
      node.setAttribute(key, attrs[key] === true ? "" : attrs[key]);
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    });
    return node;
  };

  G.fmt = function (value, digits) {
    if (value === null || value === undefined || value === "" || isNaN(value)) return "-";
    return Number(value).toFixed(digits === undefined ? 2 : digits);
  };

  G.errorText = function (data) {
    if (!data) return "Request failed.";
    if (typeof data === "string") return data;
    return Object.keys(data).map(function (key) {
      var value = data[key];
      return (key === "detail" ? "" : key + ": ") + (Array.isArray(value) ? value.join(" ") : value);
    }).join("; ");
  };

  /* throttledRedraw(fn, ms) -> a function that calls fn at most once per ms: at once when the
     last call is older, else once when it is (the trailing call kept, so the last state always
     shows). A chart fed by a stream of live events (one per GPU sample batch, several a
     second) then redraws about once a second instead of once per event. */
  G.throttledRedraw = function (fn, ms) {
    var last = -Infinity, timer = null;
    function run() {
      timer = null;
      last = Date.now();
      fn();
    }
    return function () {
      if (timer !== null) return;
      var wait = last + ms - Date.now();
      if (wait <= 0) run();
      else timer = setTimeout(run, wait);
    };
  };

  G.json = function (id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  };

  function setStatus(status) {
    var badge = document.getElementById("live-status");
    if (!badge) return;
    badge.dataset.status = status;
    badge.textContent = status;
  }

  /* live({onState(state), onEvent(ev, state)}): live.js keeps `state` equal to a fresh
     snapshot; without it (or without WebSockets) the page stays as rendered, and a reload
     shows the truth. */
  G.live = function (handlers) {
    if (!window.GoghLive || !window.WebSocket) {
      setStatus("offline");
      return;
    }
    window.GoghLive.connect({
      onState: handlers.onState || function () {},
      onEvent: handlers.onEvent || function () {},
      onStatus: setStatus,
    });
  };
})();
