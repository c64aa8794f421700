// The live dashboard: scrapes /metrics on a timer, shows the current figures
// as tiles and their recent history as charts.
"use strict";
window.stride = window.stride || {};

(function (ns) {
  const $ = (id) => document.getElementById(id);
  const fmt = (v, digits = 1, unit = "") => (Number.isFinite(v) ? v.toFixed(digits) + unit : "–");

  const TILES = [
    ["generation", "Generated tokens/s", (d) => fmt(d.generationTps)],
    ["prompt", "Prompt tokens/s", (d) => fmt(d.promptTps)],
    ["ttft", "Time to first token", (d) => fmt(d.ttftMs, 0, " ms")],
    ["itl", "Inter-token latency", (d) => fmt(d.itlMs, 1, " ms")],
    ["running", "Running", (d) => fmt(d.running, 0)],
    ["waiting", "Waiting", (d) => fmt(d.waiting, 0)],
    ["kv", "KV pool in use", (d) => `${fmt(d.kvUsePct, 1, "%")} (${fmt(d.kvPages, 0)}/${fmt(d.kvCapacity, 0)})`],
    ["kv-peak", "KV watermark", (d) => fmt(d.kvPeakPct, 1, "%")],
    ["prefix", "Prefix-cache hit rate", (d) => `${fmt(d.prefixHitPct, 0, "%")} (all: ${fmt(d.prefixHitPctTotal, 0, "%")})`],
    ["offload", "Offload tier in use", (d) => (d.offloadSlots > 0 ? fmt(d.offloadUsePct, 1, "%") : "off")],
    ["generated", "Tokens generated", (d) => fmt(d.generatedTotal, 0)],
    ["rss", "Resident memory", (d) => fmt(d.rssBytes / 1048576, 0, " MiB")],
  ];

  class Dashboard {
    constructor() {
      this.prev = null;
      this.prevTime = 0;
      this.timer = null;
      this.scrapes = 0;
      this.tiles = {};
      for (const [key, label] of TILES) {
        const tile = document.createElement("div");
        tile.className = "tile";
        tile.id = "tile-" + key;
        const l = document.createElement("div");
        l.className = "label";
        l.textContent = label;
        const v = document.createElement("div");
        v.className = "value";
        v.textContent = "–";
        tile.append(l, v);
        $("tiles").appendChild(tile);
        this.tiles[key] = v;
      }
      this.charts = {
        throughput: new ns.LineChart($("chart-throughput")),
        latency: new ns.LineChart($("chart-latency")),
        queue: new ns.LineChart($("chart-queue")),
        kv: new ns.LineChart($("chart-kv"), { fixedMax: 100 }),
        readShare: new ns.LineChart($("chart-read-share"), { fixedMax: 100 }),
        attentionTime: new ns.LineChart($("chart-attention-time"), { fixedMax: 100 }),
      };
      $("dash-interval").addEventListener("change", () => this.start());
    }

    start() {
      this.stop();
      this.scrape();
      this.timer = setInterval(() => this.scrape(), Number($("dash-interval").value));
    }

    stop() {
      if (this.timer) clearInterval(this.timer);
      this.timer = null;
    }

    async scrape() {
      try {
        const r = await fetch("/metrics", { headers: ns.authHeaders() });
        if (!r.ok) throw new Error(`/metrics answered ${r.status}`);
        const samples = ns.metrics.parsePrometheus(await r.text());
        const now = performance.now() / 1000;
        const d = ns.metrics.derive(this.prev, samples, now - this.prevTime);
        this.prev = samples;
        this.prevTime = now;
        this.render(d);
        this.scrapes += 1;
        $("dash-status").textContent = `updated ${new Date().toLocaleTimeString()} (${this.scrapes} scrapes)`;
        $("dash-status").style.color = "";
      } catch (e) {
        $("dash-status").textContent = e.message;
        $("dash-status").style.color = "var(--error)";
      }
    }

    render(d) {
      this.latest = d;
      for (const [key, , show] of TILES) this.tiles[key].textContent = show(d);
      this.charts.throughput.push({ generated: d.generationTps, prompt: d.promptTps });
      this.charts.latency.push({ TTFT: d.ttftMs, ITL: d.itlMs });
      this.charts.queue.push({ running: d.running, waiting: d.waiting });
      this.charts.kv.push({ "in use": d.kvUsePct, watermark: d.kvPeakPct, offload: d.offloadUsePct });
      this.charts.readShare.push(d.readSharePct);
      this.charts.attentionTime.push(d.attentionTimePct);
    }
  }

  ns.Dashboard = Dashboard;
})(window.stride);
