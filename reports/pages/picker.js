// costgap report: the reader's own question. Pick preset, currency, billing mode and f, type a token
// count: cost per 1M tokens, total cost and hours per target, from the cost model's exported inputs
// (reports/reader.py) with tasks/cost/model.py's formulas in the same order, so every double equals
// `costgap targets --currency C --billing B --f F --json` (and `costgap tiers ... --tokens N`).
// Rounding mirrors reports.pages.html.sig / pct exactly (half-even on the exact binary value). The view
// lives in the URL's hash, so a link restores it. Local and dependency-free; values reach the page as
// text only (textContent), never as markup.
(function () {
  "use strict";
  var root = document.getElementById("picker");
  var blob = document.getElementById("picker-inputs");
  if (!root || !blob) { return; }
  var spec = JSON.parse(blob.textContent);
  var $ = function (id) { return document.getElementById(id); };
  var ctl = { preset: $("pk-preset"), currency: $("pk-currency"), billing: $("pk-billing"), f: $("pk-f"),
              tokens: $("pk-tokens") };
  var SUFFIX = { k: 1e3, m: 1e6, b: 1e9, g: 1e9, t: 1e12 };

  // ---- rounding, once, as reports/pages/html.py does it -------------------------------------------------
  function roundFixed(a, d) {  // a >= 0: exact half-even rounding to d decimals -> {int, frac}
    var s = a.toFixed(100), dot = s.indexOf(".");
    var intPart = s.slice(0, dot), frac = s.slice(dot + 1);
    var digits = (intPart + frac.slice(0, d)).split(""), rest = frac.slice(d);
    var up = rest.charAt(0) > "5" || (rest.charAt(0) === "5" &&
             (/[1-9]/.test(rest.slice(1)) || Number(digits[digits.length - 1]) % 2 === 1));
    var intLen = intPart.length;
    if (up) {
      var i = digits.length - 1;
      while (i >= 0 && digits[i] === "9") { digits[i] = "0"; i -= 1; }
      if (i < 0) { digits.unshift("1"); intLen += 1; } else { digits[i] = String(Number(digits[i]) + 1); }
    }
    var whole = digits.slice(0, intLen).join("").replace(/^0+(?=\d)/, "");
    return { int: whole, frac: digits.slice(intLen).join("") };
  }
  function group(intPart) { return intPart.replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function sig(v, digits) {  // reports.pages.html.sig
    digits = digits || 4;
    if (v === 0) { return "0"; }
    var a = Math.abs(v), sign = v < 0 ? "-" : "", mag = Math.floor(Math.log10(a));
    var d = Math.max(0, digits - 1 - mag), r = roundFixed(a, d);
    if (mag < -4) {  // Python's f"{v:.{digits - 1}e}"
      var all = r.int + r.frac, k = all.search(/[1-9]/), exp = r.int.length - 1 - k;
      var m = (all.slice(k) + "0000000000").slice(0, digits);
      return sign + m.charAt(0) + "." + m.slice(1) + "e" + (exp < 0 ? "-" : "+") + ("0" + Math.abs(exp)).slice(-2);
    }
    return sign + group(r.int) + (d ? "." + r.frac : "");
  }
  function pct(v) {  // reports.pages.html.pct: f"{v * 100:+.1f}%"
    var x = v * 100, r = roundFixed(Math.abs(x), 1);
    return (x < 0 || Object.is(x, -0) ? "-" : "+") + r.int + "." + r.frac + "%";
  }
  function share(k, n) {  // reports.pages.html.p_text: "8.3% (1/12)"
    if (!n) { return "none recorded"; }
    var r = roundFixed(k / n * 100, 1);
    return r.int + "." + r.frac + "% (" + k + "/" + n + ")";
  }

  // ---- the cost model (tasks/cost/model.py), same operations in the same order ----------------------
  function figures(row, f, tokens) {
    var P = row[2], X = row[3], k = row[4], n = row[5];
    var p = n ? k / n : 0;                                   // failure_rate
    var R = p < 1 ? 1 + f * p / (1 - p) : null;              // rerun_factor
    var C = P !== null && R !== null ? P / (3600 * X) * 1e6 * R : null;  // effective_cost
    return { target: row[0], P: P, X: X, k: k, n: n, runs: row[6], R: R, C: C,
             total: C !== null && tokens ? C * (tokens / 1e6) : null,          // derived: cost_to_train
             hours: R !== null && tokens ? tokens / (3600 * X) * R : null };     // derived: hours_to_train
  }

  function parseTokens(text) {
    var t = String(text).replace(/[\s,_]/g, "");
    var m = /^(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?([kKmMbBgGtT])?$/.exec(t);
    if (!m) { return null; }
    var v = Number(m[1] + (m[2] !== undefined ? "e" + m[2] : ""));
    if (m[3]) { v *= SUFFIX[m[3].toLowerCase()]; }
    return isFinite(v) && v > 0 ? v : null;
  }

  function state() {
    return { preset: ctl.preset.value, currency: ctl.currency.value, billing: ctl.billing.value,
             f: Number(ctl.f.value), tokensText: ctl.tokens.value.trim() };
  }

  function cell(tr, text, value, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (value !== undefined && value !== null) { td.setAttribute("data-v", String(value)); }
    if (cls) { td.className = cls; }
    tr.appendChild(td);
  }

  function render() {
    var s = state(), tokens = parseTokens(s.tokensText);
    var rows = (spec.inputs[s.currency + "|" + s.billing] || []).filter(function (r) { return r[1] === s.preset; })
      .map(function (r) { return figures(r, s.f, tokens); });
    rows.sort(function (a, b) {  // tasks.cost.table.cheapest_first
      if ((a.C === null) !== (b.C === null)) { return a.C === null ? 1 : -1; }
      if (a.C !== b.C) { return (a.C || 0) - (b.C || 0); }
      return a.target < b.target ? -1 : a.target > b.target ? 1 : 0;
    });
    var best = rows.length && rows[0].C !== null ? rows[0].C : null;
    var body = $("pk-body");
    while (body.firstChild) { body.removeChild(body.firstChild); }
    rows.forEach(function (r) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-target", r.target);
      cell(tr, r.target, r.target);
      if (r.C === null) {
        cell(tr, r.P === null ? "no " + s.billing.replace("_", "-") + " price" : "every attempt failed", null);
        cell(tr, "—"); cell(tr, "—");
      } else {
        cell(tr, sig(r.C), r.C, "num");
        cell(tr, r.C === best ? "cheapest" : pct(r.C / best - 1), r.C / best - 1, "num");
        cell(tr, r.total === null ? "—" : sig(r.total), r.total, "num");
      }
      cell(tr, r.hours === null ? "—" : sig(r.hours), r.hours, "num");
      cell(tr, r.P === null ? "—" : sig(r.P), r.P, "num");
      cell(tr, sig(r.X), r.X, "num");
      cell(tr, share(r.k, r.n), r.n ? r.k / r.n : 0, "num");
      cell(tr, r.R === null ? "—" : sig(r.R), r.R, "num");
      cell(tr, String(r.runs), r.runs, "num");
      body.appendChild(tr);
    });
    Array.prototype.forEach.call(root.querySelectorAll("[data-cur]"), function (e) { e.textContent = s.currency; });
    var note = $("pk-note");
    note.textContent = tokens === null ? "Type a positive number of tokens, e.g. 2e9, 2,000,000,000 or 2B."
      : sig(tokens) + " tokens of " + s.preset + ", " + s.currency + ", " + s.billing.replace("_", "-") +
        " prices, f = " + s.f + (rows.length ? "" : ": no target ran this preset in the window") + ".";
    root.setAttribute("data-tokens", tokens === null ? "" : String(tokens));
    var hash = "#" + new URLSearchParams({ preset: s.preset, currency: s.currency, billing: s.billing,
                                           f: ctl.f.value, tokens: s.tokensText }).toString();
    $("pk-link").setAttribute("href", hash);
    if (window.location.hash !== hash) { history.replaceState(null, "", hash); }
  }

  function restore() {  // the view in the URL's hash, where each value is one the page offers
    var q = new URLSearchParams(window.location.hash.replace(/^#/, ""));
    ["preset", "currency", "billing", "f"].forEach(function (k) {
      var v = q.get(k), sel = ctl[k];
      if (v === null) { return; }
      var hit = Array.prototype.filter.call(sel.options, function (o) { return o.value === v || (k === "f" && Number(o.value) === Number(v)); })[0];
      if (hit) { sel.value = hit.value; }
    });
    if (q.get("tokens")) { ctl.tokens.value = q.get("tokens"); }
  }

  restore();
  ["preset", "currency", "billing", "f"].forEach(function (k) { ctl[k].addEventListener("change", render); });
  ctl.tokens.addEventListener("input", render);
  window.addEventListener("hashchange", function () { restore(); render(); });
  render();
  root.setAttribute("data-ready", "1");
})();
