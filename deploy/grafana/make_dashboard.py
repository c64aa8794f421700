#!/usr/bin/env python3
"""Writes deploy/grafana/stride.json, the Grafana dashboard for stride replicas
(the signals the Prometheus rules alert on, per replica). Edit this script, not
the JSON; tests/python/deploy/test_deploy_monitoring.py checks that the two agree and
that every query parses (promtool) and names metrics stride exports.

  python3 deploy/grafana/make_dashboard.py
"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stride.json")
SEL = 'job=~"$job",instance=~"$instance"'
RATE = "$__rate_interval"


def quantiles(metric):
    return [(f'histogram_quantile({q}, sum by (le) (rate({metric}_bucket{{{SEL}}}[{RATE}])))', f"p{int(q * 100)}")
            for q in (0.5, 0.99)]


# (title, unit, [(expr, legend)], thresholds: [(value, color)] or None)
PANELS = [
    ("Ready replicas", "short",
     [(f'sum(stride_ready{{{SEL}}})', "ready"), (f'count(up{{{SEL}}} == 1)', "scraped")], [(0, "red"), (2, "green")]),
    ("Requests by status", "reqps",
     [(f'sum by (code) (rate(stride_http_requests_total{{{SEL}}}[{RATE}]))', "{{code}}")], None),
    ("Server errors (5xx share)", "percentunit",
     [(f'sum(rate(stride_http_requests_total{{{SEL},code=~"5.."}}[{RATE}])) / '
       f'sum(rate(stride_http_requests_total{{{SEL}}}[{RATE}]))', "5xx")], [(0, "green"), (0.05, "red")]),
    ("Time to first token", "s", quantiles("stride_time_to_first_token_seconds"), [(0, "green"), (2, "red")]),
    ("Inter-token latency", "s", quantiles("stride_inter_token_latency_seconds"), None),
    ("End-to-end latency", "s", quantiles("stride_e2e_request_latency_seconds"), None),
    ("Queue depth and running batch", "short",
     [(f'stride_num_requests_waiting{{{SEL}}}', "waiting {{instance}}"),
      (f'stride_num_requests_running{{{SEL}}}', "running {{instance}}")], [(0, "green"), (32, "red")]),
    ("KV pool in use (watermark)", "percentunit",
     [(f'stride_kv_cache_usage_perc{{{SEL}}}', "{{instance}}")], [(0, "green"), (0.9, "red")]),
    ("Window hit rate", "percentunit",
     [(f'sum by (instance) (rate(stride_attention_window_pages_read_total{{{SEL}}}[{RATE}])) / '
       f'sum by (instance) (rate(stride_attention_pages_read_total{{{SEL}}}[{RATE}]))', "{{instance}}")],
     [(0, "red"), (0.8, "green")]),
    ("Prefix-cache hit rate (prompt tokens)", "percentunit",
     [(f'sum by (instance) (rate(stride_prefix_cache_hits_total{{{SEL}}}[{RATE}])) / '
       f'sum by (instance) (rate(stride_prefix_cache_queries_total{{{SEL}}}[{RATE}]))', "{{instance}}")], None),
    ("Tokens per second", "short",
     [(f'sum by (instance) (rate(stride_generation_tokens_total{{{SEL}}}[{RATE}]))', "generated {{instance}}"),
      (f'sum by (instance) (rate(stride_prompt_tokens_total{{{SEL}}}[{RATE}]))', "prompt {{instance}}")], None),
    ("Preemptions and deferred prefill", "short",
     [(f'sum by (instance) (rate(stride_num_preemptions_total{{{SEL}}}[{RATE}]))', "preempted {{instance}}"),
      (f'sum by (instance) (rate(stride_deferred_prefill_steps_total{{{SEL}}}[{RATE}]))', "deferred {{instance}}")],
     None),
    ("Resident memory", "bytes",
     [(f'stride_process_resident_memory_bytes{{{SEL}}}', "{{instance}}")], None),
]


def panel(i, title, unit, targets, thresholds):
    p = {
        "id": i + 1,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 8, "x": (i % 3) * 8, "y": (i // 3) * 8},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}, "tooltip": {"mode": "multi"}},
        "targets": [{"refId": chr(ord("A") + k), "expr": e, "legendFormat": legend,
                     "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                    for k, (e, legend) in enumerate(targets)],
    }
    if thresholds:
        p["fieldConfig"]["defaults"]["thresholds"] = {
            "mode": "absolute",
            "steps": [{"color": c, "value": None if k == 0 else v} for k, (v, c) in enumerate(thresholds)]}
        p["fieldConfig"]["defaults"]["custom"] = {"thresholdsStyle": {"mode": "line"}}
    return p


def dashboard():
    return {
        "uid": "stride-replicas",
        "title": "stride replicas",
        "tags": ["stride"],
        "timezone": "utc",
        "schemaVersion": 38,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-3h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
            {"name": "job", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": {"query": "label_values(stride_ready, job)", "refId": "job"},
             "definition": "label_values(stride_ready, job)", "current": {"text": "stride", "value": "stride"},
             "refresh": 1},
            {"name": "instance", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": {"query": 'label_values(stride_ready{job=~"$job"}, instance)', "refId": "instance"},
             "definition": 'label_values(stride_ready{job=~"$job"}, instance)', "includeAll": True, "multi": True,
             "allValue": ".*", "current": {"text": "All", "value": "$__all"}, "refresh": 2},
        ]},
        "annotations": {"list": [
            {"name": "stride alerts", "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "expr": 'ALERTS{alertname=~"Stride.*",alertstate="firing"}', "enable": True,
             "iconColor": "red", "titleFormat": "{{alertname}}", "textFormat": "{{instance}}"},
        ]},
        "panels": [panel(i, *p) for i, p in enumerate(PANELS)],
    }


def render():
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    with open(OUT, "w") as f:
        f.write(render())
    print(OUT)
