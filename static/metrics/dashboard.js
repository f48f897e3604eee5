// Live values on the evaluation dashboard: while the evaluation is fetching or active,
// re-fetch the cards and the keyword table every few seconds and swap them in. Without
// JavaScript the page is complete; it just does not refresh by itself.
(function () {
  "use strict";
  // Choosing a segment or the weights shows it at once (the Show button does without JS).
  var selector = document.querySelector("[data-testid=segment-selector]");
  if (selector) {
    selector.addEventListener("change", function () { selector.submit(); });
  }
  var live = document.getElementById("live");
  var table = document.getElementById("keyword-table");
  if (!live) { return; }
  var INTERVAL_MS = 5000;

  function fetchInto(element, url) {
    return fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) { if (html !== null) { element.innerHTML = html; } });
  }

  function tick() {
    if (live.dataset.live !== "1" || document.hidden) { return schedule(); }
    var jobs = [fetchInto(live, live.dataset.liveUrl)];
    // Reloading the table would close a row someone is reading, or reset their search box.
    var busy = table && (table.querySelector("details[open]") ||
                         table.contains(document.activeElement));
    if (table && !busy) { jobs.push(fetchInto(table, table.dataset.tableUrl)); }
    Promise.all(jobs).catch(function () {}).then(function () {
      var marker = live.querySelector("[data-live-state]");
      if (marker) { live.dataset.live = marker.dataset.liveState; }
      schedule();
    });
  }

  function schedule() { window.setTimeout(tick, INTERVAL_MS); }
  schedule();
})();
