// costgap report tables: click a heading to sort (again to reverse), type in the box to filter rows.
// Cells sort on their data-v attribute (full-precision numbers, ISO times, text); missing values last.
// Local and dependency-free: the site opens offline from file://.
(function () {
  "use strict";
  function key(td) {
    var v = td.getAttribute("data-v");
    if (v === null) { v = td.textContent.trim(); }
    if (v === "") { return null; }
    var n = Number(v);
    return isNaN(n) ? v.toLowerCase() : n;
  }
  function compare(a, b) {
    if (a === null) { return b === null ? 0 : 1; }
    if (b === null) { return -1; }
    if (typeof a === typeof b) { return a < b ? -1 : a > b ? 1 : 0; }
    return typeof a === "number" ? -1 : 1;
  }
  function sortBy(table, col, th) {
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = key(r1.cells[col]), b = key(r2.cells[col]);
      if (a === null || b === null) { return compare(a, b); }
      return dir * compare(a, b);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
  }
  function filter(table, text) {
    var q = text.trim().toLowerCase(), shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      var hit = q === "" || r.textContent.toLowerCase().indexOf(q) >= 0;
      r.style.display = hit ? "" : "none";
      shown += hit ? 1 : 0;
    });
    var count = document.querySelector('[data-count-for="' + table.id + '"]');
    if (count) { count.textContent = q === "" ? "" : shown + " of " + table.tBodies[0].rows.length + " rows"; }
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.data"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.setAttribute("aria-sort", "none");
      th.tabIndex = 0;
      th.title = "Sort by this column";
      th.addEventListener("click", function () { sortBy(table, i, th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(table, i, th); } });
    });
    var box = document.querySelector('input.filter[data-for="' + table.id + '"]');
    if (box) { box.addEventListener("input", function () { filter(table, box.value); }); }
  });
})();
