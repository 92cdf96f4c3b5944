// Checks, in the rendered page, what internal/chart promises: every chart
// has axis titles (value axes with their unit) and ticks, every series a
// legend entry, every bar and marker a hover title and a visible value
// beside or on it (no two values overlapping), every heat-map cell its
// name and value; and every sortable table sorts. Writes the findings as
// JSON into the pre element with id mandate-chart-check.
(function () {
  var out = {charts: [], problems: []};
  function problem(m) { out.problems.push(m); }
  function shown(el, box) {
    var r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return "has no size";
    var cs = getComputedStyle(el);
    if (cs.visibility !== "visible" || cs.display === "none" || parseFloat(cs.opacity) === 0) return "is hidden";
    if (parseFloat(cs.fontSize) < 9) return "is set in " + cs.fontSize;
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) return "leaves its chart";
    return "";
  }
  function numbers(s) { return (s.match(/-?\d+(\.\d+)?/g) || []); }
  // writes reports whether text writes v (to its own precision).
  function writes(text, v) {
    var ns = numbers(text);
    if (ns.length === 0) return v === 0 && text.trim() !== "";
    return ns.some(function (n) {
      var d = (n.split(".")[1] || "").length;
      return Math.abs(parseFloat(n) - v) <= 0.5 * Math.pow(10, -d) + 1e-9;
    });
  }
  function overlap(a, b) {
    return Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  }
  document.querySelectorAll("figure.chart").forEach(function (f) {
    var id = f.id, svg = f.querySelector("svg.plot");
    var c = {id: id, kind: f.dataset.kind, axes: [], units: [], legend: [], series: [], bars: 0, markers: 0, cells: 0, ticks: 0};
    out.charts.push(c);
    if (!svg) { problem(id + ": no plot"); return; }
    var box = svg.getBoundingClientRect(), fbox = f.getBoundingClientRect();
    f.querySelectorAll(".legend .key").forEach(function (k) {
      var why = shown(k, fbox);
      if (why) problem(id + ": legend entry " + k.dataset.series + " " + why);
      if (!k.textContent.trim()) problem(id + ": legend entry " + k.dataset.series + " has no name");
      c.legend.push(k.dataset.series);
    });
    svg.querySelectorAll("[data-series]").forEach(function (m) {
      if (c.series.indexOf(m.dataset.series) < 0) c.series.push(m.dataset.series);
    });
    c.series.forEach(function (s) { if (c.legend.indexOf(s) < 0) problem(id + ": series " + s + " has no legend entry"); });
    svg.querySelectorAll("text.axis-title").forEach(function (a) {
      var why = shown(a, box), t = a.textContent.trim(), u = a.dataset.unit;
      if (why) problem(id + ": axis title " + t + " " + why);
      if (!t) problem(id + ": an empty axis title");
      c.axes.push(t);
      if (u) {
        c.units.push(u);
        if (t.indexOf("(" + u + ")") < 0 && t !== u) problem(id + ": axis title " + t + " does not show its unit " + u);
      }
    });
    if (c.units.length === 0) problem(id + ": no axis or scale says its unit");
    if (c.kind !== "heatmap") {
      if (c.axes.length < 2) problem(id + ": " + c.axes.length + " axis titles, want 2");
      c.ticks = svg.querySelectorAll("text.tick").length;
      if (c.ticks < 2) problem(id + ": " + c.ticks + " ticks");
    }
    var values = [];
    svg.querySelectorAll(".bar, .marker, rect.cell, polygon.area").forEach(function (m) {
      var what = id + ": " + m.tagName + " " + (m.id || m.dataset.series), title = m.querySelector("title");
      if (!title || !title.textContent.trim()) problem(what + " has no hover title");
      if (m.tagName === "polygon") return;
      if (m.classList.contains("bar")) c.bars++;
      if (m.classList.contains("marker")) c.markers++;
      if (m.classList.contains("cell")) c.cells++;
      var labels = svg.querySelectorAll('.value[data-for="' + m.id + '"]');
      if (labels.length === 0) problem(what + " has no value written");
      labels.forEach(function (l) {
        var why = shown(l, box);
        if (why) problem(what + ": its value " + l.textContent + " " + why);
        values.push({el: l, r: l.getBoundingClientRect()});
        if (m.dataset.value !== undefined && !writes(l.textContent, parseFloat(m.dataset.value)))
          problem(what + ": its value " + m.dataset.value + " is written " + l.textContent);
      });
      if (m.classList.contains("cell")) {
        var name = svg.querySelector('.name[data-for="' + m.id + '"]');
        if (!name || !name.textContent.trim()) problem(what + " has no name");
        else { var why = shown(name, m.getBoundingClientRect()); if (why) problem(what + ": its name " + why.replace("its chart", "its cell")); }
      }
    });
    for (var i = 0; i < values.length; i++)
      for (var j = i + 1; j < values.length; j++)
        if (overlap(values[i].r, values[j].r)) problem(id + ": values " + values[i].el.textContent + " and " + values[j].el.textContent + " overlap");
  });
  document.querySelectorAll("table.sortable").forEach(function (t) {
    var rows = t.tBodies[0].rows;
    if (rows.length < 2) return;
    var hs = t.tHead.rows[0].cells;
    for (var i = 0; i < hs.length; i++) {
      if (!hs[i].classList.contains("n")) continue;
      hs[i].click();
      var vs = Array.prototype.map.call(t.tBodies[0].rows, function (r) {
        var c = r.cells[i]; return parseFloat(c.dataset.v !== undefined ? c.dataset.v : c.textContent);
      });
      for (var k = 1; k < vs.length; k++) if (vs[k - 1] > vs[k]) { problem(t.id + ": column " + hs[i].textContent + " does not sort"); break; }
      hs[i].click();
      return;
    }
  });
  var pre = document.createElement("pre");
  pre.id = "mandate-chart-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
