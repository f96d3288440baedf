// groupcoord dashboard: refresh the page's live part (server-rendered HTML) on a timer while
// the tab is visible, filter the group list as you type, "/" focuses the search.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var status = document.getElementById("status");
  var search = document.getElementById("search");
  var failures = 0;

  function say(text, stale) {
    if (!status) return;
    status.textContent = text;
    status.classList.toggle("stale", !!stale);
  }

  function filterRows() {
    if (!search || !live) return;
    var needle = search.value.trim().toLowerCase();
    live.querySelectorAll("tr[data-group]").forEach(function (row) {
      row.hidden = needle !== "" && row.getAttribute("data-group").indexOf(needle) < 0;
    });
  }

  // Swap the fragment in, keeping keyboard focus on the same element when it is still there.
  function swap(html) {
    var focused = document.activeElement;
    var focusId = focused && live.contains(focused) ? focused.id : null;
    live.innerHTML = html;
    if (focusId) {
      var again = document.getElementById(focusId);
      if (again) again.focus();
    }
    filterRows();
  }

  function query() {
    if (!search) return "";
    var q = search.value.trim();
    return q ? "?q=" + encodeURIComponent(q) : "";
  }

  var last = live ? live.innerHTML : "";
  function refresh() {
    if (document.hidden) return schedule();
    var request = new XMLHttpRequest();
    request.open("GET", live.getAttribute("data-live") + query());
    request.setRequestHeader("Accept", "text/html");
    request.onload = function () {
      if (request.status === 200) {
        failures = 0;
        if (request.responseText !== last) {
          last = request.responseText;
          swap(last);
        }
        say("Live · updated " + new Date().toLocaleTimeString());
      } else {
        failures += 1;
        say("Coordinator unreachable, retrying (" + failures + ")", true);
      }
      schedule();
    };
    request.onerror = function () {
      failures += 1;
      say("Dashboard unreachable, retrying (" + failures + ")", true);
      schedule();
    };
    request.send();
  }

  function schedule() {
    var every = parseInt(live.getAttribute("data-interval"), 10) || 2000;
    // Back off while failing, up to 30 s.
    window.setTimeout(refresh, Math.min(30000, every * Math.pow(2, failures)));
  }

  if (search) {
    search.addEventListener("input", function () {
      filterRows();
      var url = location.pathname + query();
      history.replaceState(null, "", url);
    });
    document.addEventListener("keydown", function (event) {
      var typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
      if (event.key === "/" && !typing) {
        event.preventDefault();
        search.focus();
      }
    });
  }
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) say("Live");
  });
  if (live) {
    say("Live");
    schedule();
  }
})();
