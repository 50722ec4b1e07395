// The gateway's admin pages: copy buttons, without inline handlers, so a
// strict Content-Security-Policy (script-src 'self') leaves them working.
"use strict";
(function () {
  function copy(button) {
    const field = document.getElementById(button.dataset.mcpCopy);
    if (!field) {
      return;
    }
    const text = field.value !== undefined ? field.value : field.textContent;
    const done = function () {
      const status = document.getElementById(button.dataset.mcpCopy + "-copied");
      if (status) {
        status.textContent = button.dataset.mcpCopied || "Copied";
      }
    };
    if (field.select) {
      field.select();
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () {
        document.execCommand("copy");
        done();
      });
    } else {
      document.execCommand("copy");
      done();
    }
  }
  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-mcp-copy]");
    if (button) {
      event.preventDefault();
      copy(button);
    }
  });
})();

// Authorization servers: show only the fields of the kind chosen (JWT or
// introspection); every field stays in the form, so nothing is lost.
(function () {
  function sync(select) {
    const box = select.closest(".inline-related") || document;
    box.querySelectorAll("fieldset.mcp-kind").forEach(function (set) {
      set.hidden = !set.classList.contains("mcp-kind-" + select.value);
    });
  }
  function all() {
    document.querySelectorAll("select[name$='-kind']").forEach(sync);
  }
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("select[name$='-kind']")) {
      sync(event.target);
    }
  });
  document.addEventListener("formset:added", all);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", all);
  } else {
    all();
  }
})();
