// The run start form: a judge that does not count yet cannot grade for real, so the
// counting modes are disabled while it is selected (the server refuses them anyway).
"use strict";

(function () {
  function applyJudgeChoice(form) {
    var judge = form.querySelector("select[name=judge]");
    var mode = form.querySelector("select[name=mode]");
    if (!judge || !mode || judge.selectedIndex < 0) {
      return;
    }
    var counts = judge.options[judge.selectedIndex].getAttribute("data-counts") === "1";
    Array.prototype.forEach.call(mode.options, function (option) {
      if (option.hasAttribute("data-needs-counts")) {
        option.disabled = !counts;
      }
    });
    if (mode.selectedIndex >= 0 && mode.options[mode.selectedIndex].disabled) {
      mode.value = "shadow";
    }
  }

  function applyAll(root) {
    root.querySelectorAll("form.judge-run-start").forEach(applyJudgeChoice);
  }

  document.addEventListener("change", function (event) {
    var field = event.target;
    if (field instanceof HTMLSelectElement && field.name === "judge" && field.form &&
        field.form.classList.contains("judge-run-start")) {
      applyJudgeChoice(field.form);
    }
  });
  // The panel arrives by htmx after the evaluation page has loaded.
  document.addEventListener("htmx:load", function (event) { applyAll(event.target); });
  document.addEventListener("DOMContentLoaded", function () { applyAll(document); });
})();
