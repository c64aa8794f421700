// Prometheus text format -> samples, and the dashboard's figures derived from
// two consecutive scrapes (rates over the interval, not since start-up).
"use strict";
window.stride = window.stride || {};

(function (ns) {
  // "name{a="x",b="y"} 1.5" lines -> {name: [{labels: {a: "x"}, value: 1.5}]}.
  function parsePrometheus(text) {
    const out = {};
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (!line || line.startsWith("#")) continue;
      const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/);
      if (!m) continue;
      const labels = {};
      if (m[3]) {
        for (const pair of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2];
      }
      const value = m[4] === "+Inf" ? Infinity : Number(m[4]);
      (out[m[1]] = out[m[1]] || []).push({ labels, value });
    }
    return out;
  }

  // The value of an unlabelled series (or the sum over its labels), else NaN.
  function value(samples, name) {
    const rows = samples[name];
    if (!rows || rows.length === 0) return NaN;
    return rows.reduce((s, r) => s + r.value, 0);
  }

  // {label value: sample value} of one labelled series.
  function byLabel(samples, name, label) {
    const out = {};
    for (const r of samples[name] || []) out[r.labels[label]] = r.value;
    return out;
  }

  function rate(prev, cur, name, dt) {
    if (!prev || dt <= 0) return NaN;
    const d = value(cur, name) - value(prev, name);
    return d >= 0 ? d / dt : NaN;  // a restart resets counters
  }

  // Mean of a histogram's observations made between two scrapes (seconds);
  // with none in the interval, the mean since start-up.
  function intervalMean(prev, cur, name) {
    const total = value(cur, name + "_count");
    const n = prev ? total - value(prev, name + "_count") : 0;
    if (n > 0) return (value(cur, name + "_sum") - value(prev, name + "_sum")) / n;
    return total > 0 ? value(cur, name + "_sum") / total : NaN;
  }

  // Everything the dashboard shows, from the scrape `cur` taken `dt` seconds after `prev`.
  function derive(prev, cur, dt) {
    const cap = value(cur, "stride_kv_cache_pages_capacity");
    const pct = (x) => (cap > 0 ? (100 * x) / cap : NaN);
    const d = (name) => (prev ? value(cur, name) - value(prev, name) : NaN);
    const queried = d("stride_prefix_cache_queries_total");
    const stepSeconds = d("stride_engine_step_seconds_total");
    const attention = {};
    const attNow = byLabel(cur, "stride_attention_seconds_total", "policy");
    const attPrev = prev ? byLabel(prev, "stride_attention_seconds_total", "policy") : {};
    // Only the policies this model's layers use (they have spent time).
    const used = Object.keys(attNow).filter((p) => attNow[p] > 0);
    for (const policy of used) {
      attention[policy] = prev && stepSeconds > 0 ? (100 * (attNow[policy] - (attPrev[policy] || 0))) / stepSeconds : NaN;
    }
    const readShare = {};
    const shares = byLabel(cur, "stride_attention_read_share", "policy");
    for (const policy of used) readShare[policy] = 100 * shares[policy];
    const slotsTotal = value(cur, "stride_kv_offload_slots_capacity");
    return {
      generationTps: rate(prev, cur, "stride_generation_tokens_total", dt),
      promptTps: rate(prev, cur, "stride_prompt_tokens_total", dt),
      ttftMs: 1000 * intervalMean(prev, cur, "stride_time_to_first_token_seconds"),
      itlMs: 1000 * intervalMean(prev, cur, "stride_inter_token_latency_seconds"),
      running: value(cur, "stride_num_requests_running"),
      waiting: value(cur, "stride_num_requests_waiting"),
      kvUsePct: pct(value(cur, "stride_kv_cache_pages_used")),
      kvPeakPct: pct(value(cur, "stride_kv_cache_pages_peak")),
      kvPages: value(cur, "stride_kv_cache_pages_used"),
      kvCapacity: cap,
      prefixHitPct: queried > 0 ? (100 * d("stride_prefix_cache_hits_total")) / queried : NaN,
      prefixHitPctTotal: (100 * value(cur, "stride_prefix_cache_hits_total")) /
          value(cur, "stride_prefix_cache_queries_total"),
      offloadUsePct: slotsTotal > 0 ? (100 * value(cur, "stride_kv_offload_slots_used")) / slotsTotal : NaN,
      offloadSlots: slotsTotal,
      readSharePct: readShare,
      attentionTimePct: attention,
      generatedTotal: value(cur, "stride_generation_tokens_total"),
      rssBytes: value(cur, "stride_process_resident_memory_bytes"),
    };
  }

  ns.metrics = { parsePrometheus, value, byLabel, derive };
})(window.stride);
