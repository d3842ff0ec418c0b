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

  // Tables with a header read as one block per row on a phone (herald.css,
  // table.phone-rows): each cell gets its column's name as data-label, and
  // tables without a phone layout of their own get the class. Pages and
  // htmx swaps alike.
  var ownPhoneLayout = "table.msg-table, table.msg-list, table.route-table, table.diff";
  var stackTables = function (root) {
    var tables = root.querySelectorAll ? root.querySelectorAll("table") : [];
    Array.prototype.forEach.call(tables, function (table) {
      if (table.matches(ownPhoneLayout)) {
        return;
      }
      var head = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
      var names = [];
      if (head) {
        Array.prototype.forEach.call(head.cells, function (th) {
          for (var i = 0; i < th.colSpan; i++) {
            names.push(th.textContent.replace(/\s+/g, " ").trim());
          }
        });
      }
      var label = function (section) {
        Array.prototype.forEach.call(section.rows, function (tr) {
          var col = 0;
          Array.prototype.forEach.call(tr.cells, function (cell) {
            if (names[col] && !cell.hasAttribute("data-label")) {
              cell.setAttribute("data-label", names[col]);
            }
            col += cell.colSpan;
          });
        });
      };
      Array.prototype.forEach.call(table.tBodies, label);
      if (table.tFoot) {
        label(table.tFoot);
      }
      table.classList.add("phone-rows");
    });
  };
  stackTables(document);
  document.addEventListener("htmx:afterSwap", function (e) { stackTables(e.target); });

  // htmx requests carry the session's CSRF token like forms do.
  document.addEventListener("htmx:configRequest", function (e) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    if (meta) {
      e.detail.headers["X-CSRF-Token"] = meta.getAttribute("content");
    }
  });

  // E-mail previews are as tall as the e-mail, footer included. The frame
  // is sandboxed without scripts (nothing in a template runs), and only
  // allow-same-origin lets this page read its height.
  var fitFrame = function (frame) {
    try {
      var doc = frame.contentDocument;
      if (doc && doc.documentElement) {
        frame.style.height = (doc.documentElement.scrollHeight + 2) + "px";
      }
    } catch (err) { /* a frame from elsewhere keeps its height */ }
  };
  var frames = document.querySelectorAll("iframe.email-frame");
  Array.prototype.forEach.call(frames, function (frame) {
    frame.addEventListener("load", function () { fitFrame(frame); });
    fitFrame(frame);
  });
  if (frames.length) {
    // A narrower window wraps the e-mail onto more lines.
    window.addEventListener("resize", function () { Array.prototype.forEach.call(frames, fitFrame); });
  }

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
