// Babel console: the little behaviour htmx does not cover. No inline scripts or handlers
// anywhere (the Content Security Policy forbids them); everything is wired here.
(function () {
  "use strict";

  // "Select all shown" on the World Bible's bulk form.
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!box.classList || !box.classList.contains("select-all")) return;
    var name = box.getAttribute("data-select");
    document.querySelectorAll('input[type=checkbox][name="' + name + '"]').forEach(function (c) {
      c.checked = box.checked;
    });
  });

  // After a swap, put keyboard focus on the first error so it is announced and reachable.
  document.body && document.body.addEventListener("htmx:afterSwap", function (event) {
    var error = event.detail.target && event.detail.target.querySelector(".has-error input, .has-error textarea, .has-error select");
    if (error) error.focus();
  });
})();

// The composer: "Whisper to" applies only to a whisper, so it shows only for one.
(function () {
  "use strict";
  function sync(select) {
    var form = select.form;
    var box = form && form.querySelector('[data-field="recipients"]');
    if (box) box.hidden = select.value !== "whisper";
  }
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target && target.name === "kind" && target.tagName === "SELECT") sync(target);
  });
  // The header's round moves (swapped in out of band by a poll): the composer's hint follows.
  function followClock() {
    var now = document.getElementById("current-round");
    var hint = document.getElementById("composer-round");
    if (now && hint && hint.textContent !== now.textContent) hint.textContent = now.textContent;
  }
  document.addEventListener("htmx:oobAfterSwap", followClock);
  document.addEventListener("htmx:afterSettle", followClock);
})();

// A table wider than the screen scrolls inside itself (console.css); say so above it.
(function () {
  "use strict";
  function markScrolling() {
    document.querySelectorAll("table.list").forEach(function (table) {
      var scrolls = table.scrollWidth > table.clientWidth + 1;
      var hint = table.previousElementSibling;
      var hasHint = hint && hint.classList && hint.classList.contains("scroll-hint");
      if (scrolls && !hasHint) {
        var note = document.createElement("p");
        note.className = "scroll-hint muted";
        note.textContent = "This table scrolls sideways →";
        table.parentNode.insertBefore(note, table);
      } else if (!scrolls && hasHint) {
        hint.remove();
      }
    });
  }
  document.addEventListener("DOMContentLoaded", markScrolling);
  document.addEventListener("htmx:afterSettle", markScrolling);
  document.addEventListener("toggle", markScrolling, true);
  window.addEventListener("resize", markScrolling);
})();

// Import: refuse a file over the limit before sending it, and show the upload's progress.
(function () {
  "use strict";
  function tooLarge(form) {
    var input = form.querySelector('input[type=file]');
    var limit = parseInt(form.getAttribute("data-max-bytes"), 10);
    var file = input && input.files && input.files[0];
    var note = form.querySelector("#import-too-large");
    var over = !!(file && limit && file.size > limit);
    if (note) {
      note.hidden = !over;
      note.textContent = over ? "The file is " + file.size + " bytes; the limit is " + limit + " bytes." : "";
    }
    return over;
  }
  document.addEventListener("change", function (event) {
    var form = event.target && event.target.form;
    if (form && form.id === "import-form") tooLarge(form);
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.id === "import-form" && tooLarge(form)) event.preventDefault();
  }, true);
  document.addEventListener("htmx:confirm", function (event) {
    var form = event.target;
    if (form && form.id === "import-form" && tooLarge(form)) event.preventDefault();
  });
  document.addEventListener("htmx:xhr:progress", function (event) {
    var form = event.target;
    if (!form || form.id !== "import-form" || !event.detail.lengthComputable) return;
    var box = form.querySelector(".upload-progress");
    var bar = form.querySelector("#upload-bar");
    if (box) box.hidden = false;
    if (bar) bar.value = Math.round((event.detail.loaded / event.detail.total) * 100);
  });
})();

// A turn's inline edit survives the timeline's own refreshes (the live stream, a finished
// job): re-rendering the timeline replaced the row and dropped what the DM was typing.
// While an edit form is open in it the timeline does not refresh; once the form closes
// (saved or cancelled) it refreshes once if anything asked it to meanwhile.
(function () {
  "use strict";
  var missed = false;
  function editing(timeline) {
    return !!(timeline && timeline.querySelector("form.turn-edit"));
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    var source = event.detail && event.detail.elt;
    if (!source || source.id !== "timeline" || !editing(source)) return;
    event.preventDefault();
    missed = true;
  });
  document.addEventListener("htmx:afterSettle", function () {
    var timeline = document.getElementById("timeline");
    if (!missed || !timeline || editing(timeline) || !window.htmx) return;
    missed = false;
    window.htmx.trigger(document.body, "turns-changed");
  });
})();

// A finished regeneration's job line says how it ended ("2 turn(s) regenerated; 1 came back
// word for word"). The timeline refresh that shows the step's new texts re-renders every
// row without it, so the row the DM clicked would say nothing: the line is carried over
// that one refresh (a line already carried is not carried again; a running one never is,
// the refreshed row no longer follows its job).
(function () {
  "use strict";
  var kept = {};
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "timeline") return;
    kept = {};
    target.querySelectorAll(".turn-fix .job-line:not([data-carried])").forEach(function (line) {
      var row = line.closest("li.turn");
      if (row && row.id && !line.querySelector(".spinner")) kept[row.id] = line.cloneNode(true);
    });
  });
  document.addEventListener("htmx:afterSettle", function () {
    Object.keys(kept).forEach(function (id) {
      var row = document.getElementById(id);
      var actions = row && row.querySelector(".turn-fix");
      if (!actions || actions.querySelector(".job-line")) return;
      kept[id].setAttribute("data-carried", "");
      actions.appendChild(kept[id]);
    });
    kept = {};
  });
})();
