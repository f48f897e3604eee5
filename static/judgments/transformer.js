// The transformer form: one row per grade of the chosen source scale, each picking a
// grade of the target. The page works without this file (a "Show the grades" button
// reloads the rows); this rebuilds them in place when either scale changes.
(function () {
  "use strict";
  const form = document.querySelector('[data-testid="transformer-form"]');
  if (!form) return;
  const scales = JSON.parse(form.dataset.scales || "{}");
  const mappings = JSON.parse(form.dataset.mappings || "{}");
  const source = form.elements.namedItem("source");
  const target = form.elements.namedItem("target");
  const rows = form.querySelector("[data-rows]");
  const show = form.querySelector("[data-show-grades]");
  if (show) show.hidden = true;

  function option(value, text, selected) {
    const node = document.createElement("option");
    node.value = value;
    node.textContent = text;
    node.selected = selected;
    return node;
  }

  // What was picked for each pair this visit, unsaved: going back to a pair brings its
  // picks back, and one pair's picks never fill another's rows, even rows of the same
  // grade numbers (they would map another scale's grades).
  const picks = {};
  const shown = form.elements.namedItem("shown");
  let shownPair = source.value + "->" + target.value;

  // As the server writes it: the detail scale's grades are labelled with their number.
  function text(grade) {
    return grade.label === String(grade.value) ? grade.label : grade.value + " " + grade.label;
  }

  function rebuild() {
    const current = {};
    rows.querySelectorAll("select").forEach((select) => { current[select.name] = select.value; });
    picks[shownPair] = current;
    shownPair = source.value + "->" + target.value;
    if (shown) shown.value = shownPair;
    const picked = picks[shownPair];
    const known = mappings[shownPair];
    const targetGrades = scales[target.value] || [];
    const fresh = (scales[source.value] || []).map((grade) => {
      const name = "grade_" + grade.value;
      const wanted = picked ? (picked[name] || "")
        : known ? String(known[String(grade.value)] ?? "") : "";
      const select = document.createElement("select");
      select.name = name;
      select.id = "id_" + name;
      select.required = true;
      select.append(option("", "—", wanted === ""));
      targetGrades.forEach((g) => {
        select.append(option(String(g.value), text(g), String(g.value) === wanted));
      });
      const label = document.createElement("label");
      label.htmlFor = select.id;
      label.textContent = text(grade) + ":";
      const row = document.createElement("tr");
      row.dataset.grade = String(grade.value);
      const left = document.createElement("td");
      const right = document.createElement("td");
      left.append(label);
      right.append(select);
      row.append(left, right);
      return row;
    });
    rows.replaceChildren(...fresh);
    const query = new URLSearchParams({ source: source.value, target: target.value });
    history.replaceState(null, "", "?" + query.toString());
  }

  source.addEventListener("change", rebuild);
  target.addEventListener("change", rebuild);
})();
