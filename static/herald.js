// Herald console behaviour: the little the pages need beyond htmx.
(function () {
  "use strict";

  // Forms with data-confirm ask before they submit (destructive actions).
  document.addEventListener("submit", function (e) {
    var form = e.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      e.preventDefault();
      e.stopImmediatePropagation();
    }
  }, true);

  // Enter in a field of a secondary action (the template editor's "Send a
  // test") presses that action's button, not the form's first one.
  document.addEventListener("keydown", function (e) {
    var id = e.key === "Enter" && e.target.getAttribute && e.target.getAttribute("data-enter-clicks");
    var button = id && document.getElementById(id);
    if (button) {
      e.preventDefault();
      button.click();
    }
  });

  // htmx requests carry the session's CSRF token like forms do.
  document.addEventListener("htmx:configRequest", function (e) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    if (meta) {
      e.detail.headers["X-CSRF-Token"] = meta.getAttribute("content");
    }
  });

  // The main navigation is a <details> the stylesheet keeps open on wide
  // screens; browsers that cannot style its content (no ::details-content)
  // get it opened here instead.
  var menu = document.querySelector("details.navmenu");
  if (menu && window.CSS && !CSS.supports("selector(::details-content)")) {
    var wide = window.matchMedia("(min-width: 641px)");
    var sync = function () { menu.open = wide.matches; };
    sync();
    wide.addEventListener("change", sync);
  }
})();
