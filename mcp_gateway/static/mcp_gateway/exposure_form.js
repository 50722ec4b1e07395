// Exposures → Add: choosing another tenant reloads the page with that
// tenant's engine choices (the engines it does not expose yet).
"use strict";
(function () {
  function reload(select) {
    const url = new URL(window.location.href);
    if (select.value) {
      url.searchParams.set("tenant", select.value);
    } else {
      url.searchParams.delete("tenant");
    }
    if (url.href !== window.location.href) {
      window.location.assign(url.href);
    }
  }
  function start() {
    const select = document.getElementById("id_tenant");
    if (!select) {
      return;
    }
    // The autocomplete widget (select2) reports changes through jQuery.
    if (window.django && window.django.jQuery) {
      window.django.jQuery(select).on("change", function () {
        reload(select);
      });
    } else {
      select.addEventListener("change", function () {
        reload(select);
      });
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
