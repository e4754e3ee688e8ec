// The report's one script (allowed by its hash in the page's CSP): it filters the frames and
// opens the journey a link points at. The page reads well without it.
(function () {
  "use strict";

  function filterFrames(box) {
    var table = document.getElementById(box.getAttribute("data-table"));
    var count = document.getElementById(box.getAttribute("data-count"));
    if (!table || !table.tBodies.length) return;
    var query = box.value.trim().toLowerCase();
    var rows = table.tBodies[0].rows;
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      if (row.searchText === undefined) row.searchText = row.textContent.toLowerCase();
      var hit = !query || row.searchText.indexOf(query) !== -1;
      row.hidden = !hit;
      if (hit) shown++;
    }
    if (count) count.textContent = query ? shown + " of " + rows.length + " frames" : rows.length + " frames";
  }

  Array.prototype.forEach.call(document.querySelectorAll("input.frame-search"), function (box) {
    var timer = 0;
    box.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { filterFrames(box); }, 120);
    });
  });

  function openTarget() {
    var id = location.hash.slice(1);
    if (!id) return;
    try {
      id = decodeURIComponent(id);
    } catch (e) {
      return;  // a malformed fragment names nothing here
    }
    var el = document.getElementById(id);
    if (!el) return;
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
    el.scrollIntoView();
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();

  function setAll(open) {
    Array.prototype.forEach.call(document.querySelectorAll("details.journey"), function (d) { d.open = open; });
  }
  var openAll = document.getElementById("open-all");
  var closeAll = document.getElementById("close-all");
  if (openAll) openAll.addEventListener("click", function () { setAll(true); });
  if (closeAll) closeAll.addEventListener("click", function () { setAll(false); });
})();
