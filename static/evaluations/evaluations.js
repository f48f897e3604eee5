// Progressive enhancement for the evaluations pages; every action also works without it.
(function () {
  "use strict";

  // Endpoint form: choosing a mapper preset fills the mapper fields at once (and the URL,
  // for the demo engine).
  var presets = document.getElementById("mapper-presets");
  var presetSelect = document.getElementById("id_preset");
  if (presets && presetSelect) {
    var mappers = JSON.parse(presets.textContent);
    presetSelect.addEventListener("change", function () {
      var mapper = mappers[presetSelect.value];
      if (!mapper) return;
      if (mapper.url) document.getElementById("id_url").value = mapper.url;
      document.getElementById("id_mapper_documents").value = mapper.documents || "";
      document.getElementById("id_mapper_id").value = mapper.id || "";
      document.getElementById("id_mapper_name").value = mapper.name || "";
      document.getElementById("id_mapper_image").value = mapper.image || "";
      document.getElementById("id_mapper_fields").value = Object.keys(mapper.fields || {})
        .map(function (label) { return label + ": " + mapper.fields[label]; }).join("\n");
    });
  }

  // Evaluation page: while fetching, poll the progress and move the bar.
  var box = document.getElementById("fetch-progress");
  if (!box || box.dataset.status !== "fetching") return;
  var bar = box.querySelector(".progress");
  function show(p) {
    var total = Math.max(p.total, 1);
    box.querySelector(".progress-done").style.width = (100 * p.fetched / total) + "%";
    box.querySelector(".progress-failed").style.width = (100 * p.failed / total) + "%";
    bar.setAttribute("aria-valuenow", p.percent);
    ["percent", "fetched", "failed", "total"].forEach(function (field) {
      box.querySelector('[data-field="' + field + '"]').textContent = p[field];
    });
  }
  function poll() {
    fetch(box.dataset.progressUrl, {headers: {"Accept": "application/json"}, credentials: "same-origin"})
      .then(function (response) { return response.json(); })
      .then(function (p) {
        show(p);
        // Done: reload once to show every keyword's results and the new actions.
        if (p.status !== "fetching") { window.location.reload(); return; }
        window.setTimeout(poll, 1000);
      })
      .catch(function () { window.setTimeout(poll, 3000); });
  }
  window.setTimeout(poll, 1000);
})();
