// Keyboard-first grading. The page works without this file (plain forms and links);
// this only adds keys and swaps the grading panel in place instead of reloading.
//   digit  = that grade (0 = 10 on the detail scale)
//   Backspace = previous result, S = skip for now, U = unsure (type a note, Enter/Esc to return)
//   ? = the panel listing these keys (Esc or ? closes it)
(function () {
  "use strict";
  let busy = false;

  function panel() {
    return document.getElementById("grade-panel");
  }

  function swap(html, url) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const fresh = doc.getElementById("grade-panel");
    if (!fresh) {
      // Not a grading page (logged out, error page): show it as the browser would.
      window.location.assign(url);
      return;
    }
    // Messages of the full page belong to the previous result.
    document.querySelectorAll("main > .messages").forEach((node) => node.remove());
    panel().replaceWith(fresh);
    history.replaceState(null, "", fresh.dataset.url || url);
  }

  async function send(url, init, fallback) {
    // One request at a time: a key pressed while a grade is saving is ignored rather
    // than applied to a result the grader has not seen yet.
    if (busy) return;
    busy = true;
    panel().classList.add("busy");
    try {
      const response = await fetch(url, {
        ...init,
        credentials: "same-origin",
        headers: { "HX-Request": "true" },
      });
      swap(await response.text(), response.url);
    } catch (error) {
      // The network failed: fall back to the plain form so the grade is not lost silently.
      if (fallback) fallback();
      else window.location.assign(url);
    } finally {
      busy = false;
      const current = panel();
      if (current) current.classList.remove("busy");
    }
  }

  document.addEventListener("submit", (event) => {
    const form = event.target;
    // The key panel's Close form only closes its <dialog>: the browser does that itself.
    if (!form.closest("#grade-panel") || form.method === "dialog") return;
    event.preventDefault();
    const data = new FormData(form);
    if (event.submitter && event.submitter.name) {
      data.append(event.submitter.name, event.submitter.value);
    }
    send(form.action, { method: "POST", body: data }, () => {
      if (event.submitter) {
        const hidden = document.createElement("input");
        hidden.type = "hidden";
        hidden.name = event.submitter.name;
        hidden.value = event.submitter.value;
        form.appendChild(hidden);
      }
      HTMLFormElement.prototype.submit.call(form);
    });
  });

  function keyHelp() {
    return document.getElementById("key-help");
  }

  function toggleKeyHelp() {
    const dialog = keyHelp();
    if (!dialog) return;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  }

  document.addEventListener("click", (event) => {
    if (event.target.closest("#grade-panel [data-action=keys]")) {
      event.preventDefault();
      toggleKeyHelp();
      return;
    }
    const link = event.target.closest("#grade-panel a[data-fetch]");
    if (!link) return;
    event.preventDefault();
    send(link.href, { method: "GET" });
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const root = panel();
    if (!root) return;
    const target = event.target;
    if (target.matches && target.matches("input[type=text], textarea, select")) {
      if (event.key === "Escape" || event.key === "Enter") {
        event.preventDefault();
        target.blur();
      }
      return;
    }
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    const help = keyHelp();
    if (help && help.open) {
      // While the key panel is open no key grades: Esc (the dialog's own) or ? closes it.
      if (key === "?") {
        event.preventDefault();
        help.close();
      }
      return;
    }
    if (key === "?") {
      event.preventDefault();
      toggleKeyHelp();
      return;
    }
    const gradeButton = root.querySelector(`button[data-key="${CSS.escape(key)}"]`);
    let action = null;
    if (gradeButton) action = gradeButton;
    else if (key === "Backspace") action = root.querySelector("[data-action=previous]");
    else if (key === "s") action = root.querySelector("[data-action=skip]");
    if (action) {
      event.preventDefault();
      action.click();
      return;
    }
    if (key === "u") {
      const unsure = root.querySelector("#unsure");
      const note = root.querySelector("#note");
      if (!unsure) return;
      event.preventDefault();
      unsure.checked = true;
      note.focus();
    }
  });

  // Lets tests and curious users see that the keys are live.
  document.documentElement.dataset.gradingKeys = "on";
})();
