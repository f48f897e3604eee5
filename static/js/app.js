// Behaviour every page shares, kept out of the templates so the Content-Security-Policy
// can forbid inline scripts, handlers and styles.
"use strict";

(function () {
  // A select marked data-autosubmit sends its form as soon as it changes (the team switcher).
  document.addEventListener("change", function (event) {
    var field = event.target;
    if (field instanceof HTMLSelectElement && field.hasAttribute("data-autosubmit") && field.form) {
      field.form.requestSubmit();
    }
  });

  // Values a template passes to CSS: data-grade-color sets --grade-color, data-width-percent
  // sets the width. Set through the CSSOM, which the policy allows (style="" it does not).
  function applyStyles(root) {
    root.querySelectorAll("[data-grade-color]").forEach(function (element) {
      element.style.setProperty("--grade-color", element.getAttribute("data-grade-color"));
    });
    root.querySelectorAll("[data-width-percent]").forEach(function (element) {
      element.style.width = element.getAttribute("data-width-percent") + "%";
    });
  }

  applyStyles(document);
  // Pages replace parts of themselves (the grading panel, the live dashboard figures).
  new MutationObserver(function (mutations) {
    mutations.forEach(function (mutation) {
      mutation.addedNodes.forEach(function (node) {
        if (node.nodeType === Node.ELEMENT_NODE) {
          applyStyles(node.parentNode || node);
        }
      });
    });
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
