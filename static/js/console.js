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
