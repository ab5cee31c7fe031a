// Babel: watch a round live (issue 25). The campaign page subscribes to its SSE endpoint
// (`data-live-url` on #live; a view-as page passes the same ?as=) and shows each agent's
// answer growing in place, with who is writing; a stored answer replaces its draft when the
// timeline is re-rendered. While the stream is open, the round bar's poll gives way to it
// entirely: the bar and the timeline are refreshed when the stream says something moved (a
// step stored, a turn stored or changed, the round's progress, the round now waiting for a
// human). The markup keeps the poll: it is the no-JavaScript path, and it runs at its own
// pace again whenever the stream is down.
//
// Events (server side: campaigns/console/views/live.py):
//   hello     {}                  first on every connection: an id to resume from
//   draft     {draft_id, round, step, speaker, kind, audience, text, seq, held?}
//             text: the next piece; seq counts a draft's pieces from 1; audience: the roles
//             that read it (null: everyone); held: an answer the output guard held (its
//             reviewers only)
//   draft_end {draft_id}          the model finished; the answer is being stored
//   withdrawn {draft_id}          the answer will not be shown (held, or replaced by a retry)
//   stored    {draft_id, turns?}  the answer is stored: the timeline shows it now
//   progress  {round, percent, message?}  the round bar (the message: the owner's only)
//   turn      {turns?}            a turn this page may read was stored or changed outside a
//             model's step (a human's post, a note, a reveal, an edit): refresh
//   waiting   {round, role}       the round now waits for that human: refresh the round bar
//             (and with it the composer: "Your turn")
// Every event carries an id; a reconnect sends the last one back (the browser's own
// Last-Event-ID, or ?last_event_id= when this script reopens the stream), so nothing is lost
// and nothing comes twice. Pieces are numbered per draft (seq), so a piece seen twice (a page
// restored from this tab's sessionStorage, then resumed) is applied once.
// No inline script (CSP): everything is wired here; text goes in with textContent only.
(function () {
  "use strict";

  var root = document.getElementById("live");
  if (!root || !window.EventSource) return; // no stream: the pollers do it all

  var baseUrl = root.getAttribute("data-live-url");
  var inspectUrl = root.getAttribute("data-inspect-url") || "";
  var inspectRoles = (root.getAttribute("data-inspect-roles") || "").split(",").filter(Boolean);
  var list = document.getElementById("live-drafts");
  var stateBadge = document.getElementById("live-state");
  var progressLine = document.getElementById("live-progress");
  var kinds = {};
  try { kinds = JSON.parse(root.getAttribute("data-kinds") || "{}"); } catch (e) { /* raw kinds */ }

  var STORE_KEY = "babel-live:" + baseUrl;
  var KEEP_MS = 10 * 60 * 1000; // a reload within this time resumes where the page was
  var state = {
    source: null,
    open: false,
    lastId: "",
    drafts: {}, // draft_id → {round, step, speaker, kind, text, seq, ended, stored, gap}
    allowStatus: 0, // round-bar requests this script asked for itself
    polls: 0, // round-bar polls that went to the server (not this script's refreshes)
    retry: 1000,
    events: 0, // events applied (tests read it)
  };
  window.babelLive = state;

  // --- the draft blocks ---------------------------------------------------------------
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function blockFor(id) {
    return document.getElementById("draft-" + id);
  }

  function render(id) {
    var d = state.drafts[id];
    var block = blockFor(id);
    if (!block) {
      block = el("li", "turn draft kind-" + d.kind);
      block.id = "draft-" + id;
      block.setAttribute("data-draft", id);
      block.setAttribute("data-speaker", d.speaker);
      block.setAttribute("data-kind", d.kind);
      var head = el("div", "turn-head");
      head.appendChild(el("span", "round", "R" + d.round));
      head.appendChild(el("strong", "speaker", d.speaker));
      head.appendChild(el("span", "kind badge", kinds[d.kind] || d.kind));
      if (d.audience === null || d.audience === undefined) {
        head.appendChild(el("span", "chip public", "everyone"));
      } else {
        d.audience.forEach(function (role) { head.appendChild(el("span", "chip", role)); });
      }
      if (d.held) head.appendChild(el("span", "badge warn", "held for review"));
      head.appendChild(el("span", "badge live-badge writing", d.speaker + " is writing…"));
      if (inspectUrl && (inspectRoles.indexOf(d.speaker) >= 0 || inspectRoles.indexOf("*") >= 0)) {
        var link = el("a", "inspect-pack", "Pack it was given");
        link.href = inspectUrl.replace("__role__", encodeURIComponent(d.speaker));
        link.title = "Open the context inspector for " + d.speaker + " (round " + d.round + ")";
        head.appendChild(link);
      }
      block.appendChild(head);
      var body = el("div", "turn-body draft-body");
      if (d.gap) body.appendChild(el("span", "draft-gap muted", "… "));
      body.appendChild(el("span", "draft-text"));
      body.appendChild(el("span", "cursor", "▍"));
      body.lastChild.setAttribute("aria-hidden", "true");
      block.appendChild(body);
      list.appendChild(block);
      root.hidden = false;
      syncJump();
    }
    block.querySelector(".draft-text").textContent = d.text;
    var badge = block.querySelector(".live-badge");
    if (d.stored) {
      badge.textContent = "stored";
      block.classList.add("draft-stored");
    } else if (d.ended) {
      badge.textContent = "checking…";
      block.classList.add("draft-ended");
    }
  }

  function remove(id) {
    var block = blockFor(id);
    if (block) block.remove();
    delete state.drafts[id];
    if (!list.children.length) root.hidden = true;
    syncJump();
  }

  // On a narrow screen the round bar sits above the timeline: it links down to the drafts.
  var jump = null;
  function syncJump() {
    if (!progressLine) return;
    if (!jump) {
      jump = el("a", "live-jump", "watch it ↓");
      jump.href = "#live";
    }
    if (root.hidden) {
      if (jump.parentNode) jump.remove();
    } else if (!jump.parentNode && !progressLine.hidden) {
      progressLine.appendChild(document.createTextNode(" "));
      progressLine.appendChild(jump);
    }
  }

  // --- the round bar ------------------------------------------------------------------
  function refreshStatus() {
    var bar = document.getElementById("round-status");
    if (!bar || !window.htmx) return;
    state.allowStatus += 1;
    var done = function () { state.allowStatus -= 1; };
    var request = window.htmx.ajax("GET", bar.getAttribute("hx-get"), {
      source: bar, target: bar, swap: "outerHTML", headers: { "X-Babel-Live": "refresh" },
    });
    if (request && request.then) request.then(done, done); else done();
  }

  // Several events in a row (a step's turns, its ``stored``, its progress) make one refresh
  // of the round bar and, when turns moved, of the timeline.
  var pending = null;
  function refreshSoon(turns) {
    if (!pending) {
      pending = { turns: false };
      window.setTimeout(function () {
        var wanted = pending;
        pending = null;
        refreshStatus();
        if (wanted.turns && window.htmx) window.htmx.trigger(document.body, "turns-changed");
      }, 100);
    }
    if (turns) pending.turns = true;
  }

  // While the stream is open the round bar does not poll: the stream says when it moved
  // (the requests this script makes itself always go).
  document.addEventListener("htmx:beforeRequest", function (event) {
    var source = event.detail && event.detail.elt;
    if (!source || source.id !== "round-status") return;
    if (state.allowStatus > 0) return;
    if (state.open) {
      event.preventDefault();
      return;
    }
    state.polls += 1;
  });

  // A re-rendered timeline holds the stored turns: their drafts go.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "timeline") return;
    Object.keys(state.drafts).forEach(function (id) {
      if (state.drafts[id].stored) remove(id);
    });
    save();
  });

  // --- events -------------------------------------------------------------------------
  function apply(name, data) {
    var id = data.draft_id;
    var d = id !== undefined ? state.drafts[id] : null;
    if (name === "draft") {
      if (!d) {
        d = state.drafts[id] = {
          round: data.round, step: data.step, speaker: data.speaker, kind: data.kind,
          audience: data.audience, held: !!data.held,
          text: "", seq: 0, ended: false, stored: false,
          // Joined after its first piece (a page opened mid-answer): said, not hidden.
          gap: data.seq > 1,
        };
      }
      if (data.seq <= d.seq) return; // seen already (a resumed or restored page)
      d.seq = data.seq;
      d.text += data.text;
      render(id);
    } else if (name === "draft_end") {
      if (d) { d.ended = true; render(id); }
    } else if (name === "withdrawn") {
      remove(id);
    } else if (name === "stored") {
      if (d) { d.ended = true; d.stored = true; render(id); }
      refreshSoon(true);
      // Filtered out of this timeline (or the refresh failed): it still goes.
      window.setTimeout(function () { if (state.drafts[id] && state.drafts[id].stored) remove(id); }, 15000);
    } else if (name === "progress") {
      // The owner reads the same step on two channels, with and without its message, in
      // either order: the plain copy never replaces the message.
      var last = state.progress;
      if (!data.message && last && last.message && last.round === data.round &&
          last.percent === data.percent) return;
      state.progress = data;
      var round = document.getElementById("current-round");
      if (round && data.round !== undefined && data.round !== null) round.textContent = String(data.round);
      if (progressLine) {
        var line = data.message;
        if (!line && data.round !== undefined) {
          line = "Round " + data.round + " is being played" +
            (data.percent !== undefined ? " (" + data.percent + "%)" : "") + ".";
        }
        progressLine.textContent = line || "";
        progressLine.hidden = !line || data.percent >= 100;
        if (jump) jump.remove();
        syncJump();
      }
      refreshSoon(false);
    } else if (name === "turn") {
      refreshSoon(true);
    } else if (name === "waiting") {
      state.waiting = data; // whom the round waits for (every page's round bar says it)
      refreshSoon(false);
    }
  }

  function handler(name) {
    return function (event) {
      var data;
      try { data = JSON.parse(event.data); } catch (e) { return; }
      if (event.lastEventId) state.lastId = event.lastEventId;
      apply(name, data);
      state.events += 1;
      save();
    };
  }

  // --- this tab's memory (a reload mid-answer picks up where the page was) ---------------
  function save() {
    try {
      window.sessionStorage.setItem(STORE_KEY, JSON.stringify({
        at: Date.now(), lastId: state.lastId, drafts: state.drafts,
      }));
    } catch (e) { /* storage full or off: a reload then starts afresh */ }
  }

  function restore() {
    var saved;
    try { saved = JSON.parse(window.sessionStorage.getItem(STORE_KEY) || "null"); } catch (e) { saved = null; }
    if (!saved || !saved.lastId || Date.now() - saved.at > KEEP_MS) return;
    state.lastId = saved.lastId;
    Object.keys(saved.drafts || {}).forEach(function (id) {
      var d = saved.drafts[id];
      if (d.stored) return; // already in the timeline this page rendered
      state.drafts[id] = d;
      render(id);
    });
  }

  // --- the connection -----------------------------------------------------------------
  function setOpen(open) {
    state.open = open;
    if (stateBadge) {
      stateBadge.hidden = false;
      stateBadge.textContent = open ? "live" : "reconnecting…";
      stateBadge.classList.toggle("off", !open);
    }
  }

  function connect() {
    var url = baseUrl;
    if (state.lastId) {
      url += (url.indexOf("?") < 0 ? "?" : "&") + "last_event_id=" + encodeURIComponent(state.lastId);
    }
    var source = new EventSource(url);
    state.source = source;
    source.addEventListener("open", function () {
      state.retry = 1000;
      var was = state.open;
      setOpen(true);
      // The poll stops now: look once for what it would have seen since its last look (a
      // fresh connection starts at the newest event, after the page was rendered); the
      // round bar's answer refreshes the timeline too when it has new turns.
      if (!was) refreshSoon(false);
    });
    source.addEventListener("error", function () {
      setOpen(false); // the round bar polls again until the stream is back
      if (source.readyState === EventSource.CLOSED && state.source === source) {
        // The browser gave up (the server refused or went away): try again, resuming.
        window.setTimeout(connect, state.retry);
        state.retry = Math.min(state.retry * 2, 30000);
      }
    });
    ["hello", "draft", "draft_end", "withdrawn", "stored", "progress", "turn", "waiting"].forEach(function (name) {
      source.addEventListener(name, handler(name));
    });
  }

  // Close and reopen, resuming from the last event (what a dropped connection does).
  state.reconnect = function () {
    if (state.source) state.source.close();
    state.source = null;
    setOpen(false);
    connect();
  };

  window.addEventListener("pagehide", function () {
    if (state.source) state.source.close();
  });

  restore();
  connect();
})();
