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

  // A wide table scrolls inside its own box instead of widening the page on a phone.
  function wrapTables(root) {
    var tables = root instanceof HTMLTableElement ? [root] : root.querySelectorAll("table");
    Array.prototype.forEach.call(tables, function (table) {
      var parent = table.parentElement;
      if (!parent || parent.classList.contains("table-scroll") || table.closest("pre")) {
        return;
      }
      var box = document.createElement("div");
      box.className = "table-scroll";
      parent.insertBefore(box, table);
      box.appendChild(table);
    });
  }

  // A table marked "stack" becomes one card per row on a phone (static/css/app.css): each
  // cell is labelled with its column's heading (the headings of every header row above
  // it, for a two-row header with spans), so the cards read without the header row.
  function labelStackedTables(root) {
    var tables = root instanceof HTMLTableElement ? [root] : root.querySelectorAll("table.stack");
    Array.prototype.forEach.call(tables, function (table) {
      if (!table.classList.contains("stack") || !table.tHead) {
        return;
      }
      var labels = [];
      var taken = [];  // taken[row][column]: covered by a cell spanning rows from above
      Array.prototype.forEach.call(table.tHead.rows, function (row, rowIndex) {
        var column = 0;
        taken[rowIndex] = taken[rowIndex] || [];
        Array.prototype.forEach.call(row.cells, function (cell) {
          while (taken[rowIndex][column]) { column += 1; }
          // innerText: a <br> in a heading is a space, not words run together.
          var text = (cell.innerText || cell.textContent).replace(/\s+/g, " ").trim();
          for (var c = column; c < column + cell.colSpan; c += 1) {
            for (var r = rowIndex; r < rowIndex + cell.rowSpan; r += 1) {
              taken[r] = taken[r] || [];
              taken[r][c] = true;
            }
            if (text && labels[c] !== undefined && labels[c].indexOf(text) === -1) {
              labels[c] = labels[c] + " · " + text;
            } else if (text && labels[c] === undefined) {
              labels[c] = text;
            }
          }
          column += cell.colSpan;
        });
      });
      Array.prototype.forEach.call(table.tBodies, function (body) {
        Array.prototype.forEach.call(body.rows, function (row) {
          var column = 0;
          Array.prototype.forEach.call(row.cells, function (cell) {
            if (cell.colSpan === 1 && labels[column] && !cell.hasAttribute("data-label")) {
              cell.setAttribute("data-label", labels[column]);
            }
            column += cell.colSpan;
          });
        });
      });
      table.setAttribute("data-stacked", "");
    });
  }

  applyStyles(document);
  wrapTables(document);
  labelStackedTables(document);
  // Pages replace parts of themselves (the grading panel, the live dashboard figures).
  new MutationObserver(function (mutations) {
    mutations.forEach(function (mutation) {
      mutation.addedNodes.forEach(function (node) {
        if (node.nodeType === Node.ELEMENT_NODE) {
          applyStyles(node.parentNode || node);
          wrapTables(node);
          labelStackedTables(node);
        }
      });
    });
  }).observe(document.documentElement, { childList: true, subtree: true });

  // The menu button of a narrow screen opens and closes the nav (templates/base.html).
  document.addEventListener("click", function (event) {
    var toggle = event.target instanceof Element && event.target.closest("[data-menu-toggle]");
    if (!toggle) {
      return;
    }
    var open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    toggle.closest(".topbar").classList.toggle("menu-open", open);
  });
  document.addEventListener("keydown", function (event) {
    var toggle = document.querySelector("[data-menu-toggle][aria-expanded=true]");
    if (event.key === "Escape" && toggle) {
      toggle.setAttribute("aria-expanded", "false");
      toggle.closest(".topbar").classList.remove("menu-open");
      toggle.focus();
    }
  });

  // The notification bell: its fragment (unread count) after the page loads, then every 60 s.
  var bell = document.querySelector("[data-bell-url]");
  if (bell) {
    var refreshBell = function () {
      fetch(bell.getAttribute("data-bell-url"), {credentials: "same-origin"})
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) { if (html) { bell.innerHTML = html; } })
        .catch(function () {});
    };
    refreshBell();
    window.setInterval(refreshBell, 60000);
  }
})();
