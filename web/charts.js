// A small line chart on a canvas: a rolling window of points per series,
// auto-scaled y axis, legend. No libraries: the page fetches nothing else.
"use strict";
window.stride = window.stride || {};

(function (ns) {
  const COLORS = ["#2f6fde", "#e8590c", "#2b8a3e", "#9c36b5", "#c92a2a", "#0b7285"];

  class LineChart {
    constructor(canvas, { maxPoints = 300, fixedMax = null } = {}) {
      this.canvas = canvas;
      this.maxPoints = maxPoints;
      this.fixedMax = fixedMax;
      this.series = new Map();  // name -> [y or NaN]
    }

    // One new point per series; series missing from `values` get a gap.
    push(values) {
      for (const name of Object.keys(values)) {
        if (!this.series.has(name)) {
          const longest = Math.max(0, ...[...this.series.values()].map((s) => s.length));
          this.series.set(name, new Array(longest).fill(NaN));
        }
      }
      for (const [name, points] of this.series) {
        const v = values[name];
        points.push(Number.isFinite(v) ? v : NaN);
        if (points.length > this.maxPoints) points.shift();
      }
      this.draw();
    }

    pointCount() {
      return Math.max(0, ...[...this.series.values()].map((s) => s.filter(Number.isFinite).length));
    }

    draw() {
      const c = this.canvas;
      const ratio = window.devicePixelRatio || 1;
      const w = c.clientWidth, h = c.clientHeight;
      if (c.width !== Math.round(w * ratio) || c.height !== Math.round(h * ratio)) {
        c.width = Math.round(w * ratio);
        c.height = Math.round(h * ratio);
      }
      const g = c.getContext("2d");
      g.setTransform(ratio, 0, 0, ratio, 0, 0);
      g.clearRect(0, 0, w, h);
      const left = 44, right = 8, top = 18, bottom = 14;
      const all = [...this.series.values()].flat().filter(Number.isFinite);
      let max = this.fixedMax !== null ? this.fixedMax : Math.max(1e-9, ...all) * 1.1;
      if (!Number.isFinite(max) || max <= 0) max = 1;
      g.font = "11px system-ui, sans-serif";
      g.strokeStyle = "#e3e6ec";
      g.fillStyle = "#667085";
      g.lineWidth = 1;
      for (let i = 0; i <= 4; ++i) {
        const y = top + ((h - top - bottom) * i) / 4;
        g.beginPath();
        g.moveTo(left, y);
        g.lineTo(w - right, y);
        g.stroke();
        g.fillText(formatTick(max * (1 - i / 4)), 2, y + 4);
      }
      let legendX = left;
      let k = 0;
      for (const [name, points] of this.series) {
        const color = COLORS[k++ % COLORS.length];
        g.strokeStyle = color;
        g.lineWidth = 1.6;
        g.beginPath();
        let pen = false;
        points.forEach((v, i) => {
          if (!Number.isFinite(v)) {
            pen = false;
            return;
          }
          // Points spread over the width until the window is full, then scroll.
          const x = left + ((w - left - right) * i) / Math.max(1, points.length - 1);
          const y = top + (h - top - bottom) * (1 - Math.min(v, max) / max);
          if (pen) g.lineTo(x, y);
          else g.moveTo(x, y);
          pen = true;
        });
        g.stroke();
        g.fillStyle = color;
        g.fillRect(legendX, 4, 10, 3);
        g.fillStyle = "#1d2430";
        g.fillText(name, legendX + 14, 10);
        legendX += 22 + g.measureText(name).width;
      }
    }
  }

  function formatTick(v) {
    if (v >= 1000) return (v / 1000).toFixed(1) + "k";
    if (v >= 10) return v.toFixed(0);
    return v.toFixed(v >= 1 ? 1 : 2);
  }

  ns.LineChart = LineChart;
})(window.stride);
