// The console's only script: draws the job page's charts from the JSON the server
// embedded in the page, and copies YAML blocks. No request leaves the page.
(function () {
  "use strict";

  var MARK_COLORS = { oom: "#d93025", evicted: "#e37400", relaunched: "#7b1fa2" };
  var WIDTH = 430, HEIGHT = 200;
  var MIN_SPAN_S = 600;  // the narrowest time axis: ten minutes

  function eventMarks(events) {
    // Vertical lines at each OOM, eviction and relaunch, drawn over the series.
    return function (u) {
      var ctx = u.ctx;
      ctx.save();
      ctx.lineWidth = 2 * devicePixelRatio;
      events.forEach(function (e) {
        var x = u.valToPos(e.ts, "x", true);
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
        ctx.strokeStyle = MARK_COLORS[e.kind] || "#000";
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
      });
      ctx.restore();
    };
  }

  function chart(parent, title, unit, x, lines, events) {
    var figure = document.createElement("figure");
    var caption = document.createElement("figcaption");
    caption.textContent = title + " (" + unit + ")";
    figure.appendChild(caption);
    parent.appendChild(figure);
    var series = [{}];
    var data = [x];
    lines.forEach(function (line) {
      series.push({ label: line.label, stroke: line.color, width: line.width || 1.5, dash: line.dash, spanGaps: true });
      data.push(line.values);
    });
    var x0 = x.length ? x[0] : 0, x1 = x.length ? x[x.length - 1] : 1;
    events.forEach(function (e) { x0 = Math.min(x0, e.ts); x1 = Math.max(x1, e.ts); });
    // A single sample (or a few seconds of them) would span under a second, ticked in
    // milliseconds: centre it in MIN_SPAN_S instead.
    if (x1 - x0 < MIN_SPAN_S) {
      var pad = (MIN_SPAN_S - (x1 - x0)) / 2;
      x0 -= pad; x1 += pad;
    }
    var options = {
      width: WIDTH, height: HEIGHT, series: series,
      scales: { x: { time: true, range: [x0, x1] }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
      axes: [{}, { size: 55 }],
      hooks: { draw: [eventMarks(events)] },
    };
    var plot = new uPlot(options, data, figure);
    plot.root.setAttribute("role", "img");
    plot.root.setAttribute("aria-label", title + " over time");
    figure.dataset.chart = title;
    figure.dataset.spanS = String(x1 - x0);
    return plot;
  }

  function drawJobCharts() {
    var source = document.getElementById("chart-data");
    var root = document.getElementById("charts-root");
    if (!source || !root || typeof uPlot === "undefined") return;
    var charts = JSON.parse(source.textContent);
    var drawn = 0;
    Object.keys(charts.roles).forEach(function (name) {
      var role = charts.roles[name];
      var box = document.createElement("div");
      box.className = "chart-role";
      var heading = document.createElement("h3");
      heading.textContent = name;
      box.appendChild(heading);
      var grid = document.createElement("div");
      grid.className = "chart-grid";
      box.appendChild(grid);
      root.appendChild(box);
      chart(grid, name + " CPU", "cores", role.x, [
        { label: "used (mean)", color: "#2f5fd0", values: role.cpu.used_mean },
        { label: "used (largest node)", color: "#8fa8e8", values: role.cpu.used_max },
        { label: "requested", color: "#444", dash: [6, 4], values: role.cpu.requested },
      ], role.events);
      chart(grid, name + " memory", "GiB", role.x, [
        { label: "used (mean)", color: "#1e7b3a", values: role.memory.used_mean },
        { label: "used (largest node)", color: "#8cc79c", values: role.memory.used_max },
        { label: "requested", color: "#444", dash: [6, 4], values: role.memory.requested },
      ], role.events);
      drawn += 2;
      if (role.has_gpu) {
        chart(grid, name + " GPU utilization", "%", role.x, [
          { label: "used (mean)", color: "#b0651a", values: role.gpu_util.used_mean },
        ], role.events);
        chart(grid, name + " GPU memory", "GiB", role.x, [
          { label: "used (largest node)", color: "#7b1fa2", values: role.gpu_memory.used_max },
          { label: "device", color: "#444", dash: [6, 4], values: role.gpu_memory.device },
        ], role.events);
        drawn += 2;
      }
    });
    if (charts.speed) {
      var box = document.createElement("div");
      box.className = "chart-role";
      var heading = document.createElement("h3");
      heading.textContent = "Training speed";
      box.appendChild(heading);
      var grid = document.createElement("div");
      grid.className = "chart-grid";
      box.appendChild(grid);
      root.appendChild(box);
      chart(grid, "Speed", "steps/s", charts.speed.x, [
        { label: "steps/s (mean)", color: "#2f5fd0", values: charts.speed.steps_per_s },
      ], []);
      drawn += 1;
    }
    if (!drawn) {
      var none = document.createElement("p");
      none.textContent = "No samples yet.";
      root.appendChild(none);
    }
    root.dataset.drawn = String(drawn);
  }

  function copyButtons() {
    document.querySelectorAll("button[data-copy]").forEach(function (button) {
      button.addEventListener("click", function () {
        var text = document.getElementById(button.dataset.copy).textContent;
        var done = function () { button.textContent = "Copied"; };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(text).then(done, function () { select(button.dataset.copy); });
        } else {
          select(button.dataset.copy);
        }
      });
    });
  }

  function select(id) {
    // Without the clipboard API (plain HTTP off loopback): select the text for Ctrl+C.
    var range = document.createRange();
    range.selectNodeContents(document.getElementById(id));
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  drawJobCharts();
  copyButtons();
})();
