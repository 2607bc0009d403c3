/* GOGH live updates (docs/live-updates.md): no framework, no CDN.
 *
 *   var live = GoghLive.connect({
 *     onState: function (state) {},          // a whole new state (first snapshot, or after a resync)
 *     onEvent: function (event, state) {},   // one applied event and the state after it
 *     onStatus: function (status) {}         // "live" | "reconnecting" | "signed-out"
 *   });
 *   live.state; live.close();
 *
 * It fetches the snapshot ({event_id, state}), opens ws(s)://HOST/ws/live/?after=event_id and
 * applies each event to state[kind][key] (upsert: set to event.data; delete: remove). When the
 * socket drops it reconnects with backoff from the last applied id, so no event is missed; when
 * the server answers {"type": "resync"} (the page was away longer than events are kept) it
 * starts again from a fresh snapshot, as it does after a 4400 close (its id was refused). A 4401
 * close (signed out) stops it. Without WebSocket support the page keeps its snapshot.
 */
(function (global) {
  "use strict";

  var MIN_DELAY_MS = 500;
  var MAX_DELAY_MS = 10000;
  var STABLE_MS = 5000; // a socket open this long (or that delivered a message) resets the backoff
  var BAD_REQUEST = 4400;
  var SIGNED_OUT = 4401;

  function applyEvent(state, event) {
    var objects = state[event.kind] || (state[event.kind] = {});
    if (event.op === "delete") {
      delete objects[event.key];
    } else {
      objects[event.key] = event.data;
    }
    return state;
  }

  function connect(options) {
    options = options || {};
    var snapshotUrl = options.snapshotUrl || "/api/live/snapshot/";
    var socketPath = options.socketPath || "/ws/live/";
    var onState = options.onState || function () {};
    var onEvent = options.onEvent || function () {};
    var onStatus = options.onStatus || function () {};
    var live = { state: null, lastId: 0, closed: false, close: close };
    var socket = null;
    var delay = MIN_DELAY_MS;
    var timer = null;

    function later(step) {
      onStatus("reconnecting");
      timer = setTimeout(step, delay);
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }

    function fetchSnapshot() {
      if (live.closed) return;
      fetch(snapshotUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) {
          if (response.status === 401 || response.status === 403) {
            onStatus("signed-out");
            throw null;
          }
          if (!response.ok) throw new Error("snapshot: HTTP " + response.status);
          return response.json();
        })
        .then(function (snapshot) {
          live.state = snapshot.state;
          live.lastId = snapshot.event_id;
          onState(live.state);
          openSocket();
        })
        .catch(function (error) {
          if (error !== null && !live.closed) later(fetchSnapshot);
        });
    }

    function openSocket() {
      if (live.closed || typeof global.WebSocket !== "function") return;
      var scheme = global.location.protocol === "https:" ? "wss://" : "ws://";
      var resync = false;
      var stable = null;
      // The server accepts before it checks anything, so an open socket proves nothing: the
      // backoff is reset only by a message or by staying open STABLE_MS, else a socket closed
      // at once (4400, 1011) would reconnect every MIN_DELAY_MS forever from every tab.
      function steady() {
        clearTimeout(stable);
        delay = MIN_DELAY_MS;
      }
      socket = new global.WebSocket(scheme + global.location.host + socketPath + "?after=" + live.lastId);
      socket.onopen = function () {
        stable = setTimeout(steady, STABLE_MS);
        onStatus("live");
      };
      socket.onmessage = function (message) {
        steady();
        var event = JSON.parse(message.data);
        if (event.type === "resync") {
          resync = true;
          return;
        }
        if (event.id <= live.lastId) return; // already applied
        applyEvent(live.state, event);
        live.lastId = event.id;
        onEvent(event, live.state);
      };
      socket.onclose = function (closing) {
        clearTimeout(stable);
        socket = null;
        if (live.closed) return;
        if (closing.code === SIGNED_OUT) {
          onStatus("signed-out");
        } else if (resync || closing.code === BAD_REQUEST) {
          later(fetchSnapshot);
        } else {
          later(openSocket);
        }
      };
    }

    function close() {
      live.closed = true;
      clearTimeout(timer);
      if (socket) socket.close();
    }

    fetchSnapshot();
    return live;
  }

  global.GoghLive = { connect: connect, applyEvent: applyEvent };
})(window);
