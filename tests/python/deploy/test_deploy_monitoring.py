"""deploy/prometheus and deploy/grafana: the alert rules pass their promtool
unit tests, the example Prometheus config loads, every dashboard query parses
as PromQL, and every stride_* metric the rules, their tests and the dashboard
name is one a running server really exports."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from stride_server import ROOT, StrideServer

PROM = os.path.join(ROOT, "deploy", "prometheus")
GRAFANA = os.path.join(ROOT, "deploy", "grafana")
sys.path.insert(0, GRAFANA)
import make_dashboard  # noqa: E402


def promtool(*args, cwd=None):
    tool = shutil.which("promtool")
    assert tool, "promtool missing: scripts/setup installs the 'prometheus' package"
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def dashboard_exprs():
    with open(os.path.join(GRAFANA, "stride.json")) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs += [a["expr"] for a in dash["annotations"]["list"] if "expr" in a]
    return exprs


def as_promql(expr):
    """Grafana's variables replaced by the values Grafana would send."""
    return expr.replace("$__rate_interval", "1m").replace("$job", "stride").replace("$instance", ".*")


def check_as_rules(exprs, tmp_path, name):
    """promtool parses each expression as the expr of a recording rule."""
    rules = {"groups": [{"name": name, "rules": [{"record": f"dashboard:query_{i}", "expr": as_promql(e)}
                                                  for i, e in enumerate(exprs)]}]}
    path = tmp_path / f"{name}.yml"
    path.write_text(json.dumps(rules))  # JSON is YAML
    return promtool("check", "rules", str(path))


def test_alert_rules_pass_their_promtool_unit_tests():
    p = promtool("check", "rules", "stride-rules.yml", cwd=PROM)
    assert p.returncode == 0, p.stdout + p.stderr
    p = promtool("test", "rules", "stride-rules.test.yml", cwd=PROM)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout


def test_every_alert_has_a_unit_test():
    with open(os.path.join(PROM, "stride-rules.yml")) as f:
        alerts = set(re.findall(r"^\s*- alert: (\w+)", f.read(), re.M))
    with open(os.path.join(PROM, "stride-rules.test.yml")) as f:
        tested = set(re.findall(r"alertname: (\w+)", f.read()))
    assert alerts and alerts <= tested, f"alerts without a unit test: {sorted(alerts - tested)}"


def test_example_prometheus_config_loads():
    p = promtool("check", "config", "prometheus.yml", cwd=PROM)
    assert p.returncode == 0, p.stdout + p.stderr


def test_dashboard_json_is_what_its_generator_writes():
    with open(os.path.join(GRAFANA, "stride.json")) as f:
        assert f.read() == make_dashboard.render(), "run python3 deploy/grafana/make_dashboard.py"


def test_every_dashboard_query_parses(tmp_path):
    exprs = dashboard_exprs()
    assert len(exprs) >= 15
    p = check_as_rules(exprs, tmp_path, "dashboard")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in p.stdout
    # The same check refuses a query with a PromQL error.
    p = check_as_rules(exprs + ['sum by (le (rate(stride_ready[1m]))'], tmp_path, "broken")
    assert p.returncode != 0


def exported_names(body):
    names = set()
    for line in body.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            names.add(m.group(1))
            if m.group(2) == "histogram":
                names |= {m.group(1) + s for s in ("_bucket", "_sum", "_count")}
    return names


@pytest.fixture(scope="module")
def metrics_body():
    with StrideServer() as srv:
        status, _, _ = srv.post("/v1/completions", {"model": srv.model_name, "prompt": "Hello", "max_tokens": 2})
        assert status == 200
        status, _, body = srv.get("/metrics")
        assert status == 200
        return body.decode()


def test_rules_and_dashboard_name_only_exported_metrics(metrics_body):
    exported = exported_names(metrics_body)
    assert "stride_kv_cache_usage_perc" in exported
    texts = []
    for name in ("stride-rules.yml", "stride-rules.test.yml"):
        with open(os.path.join(PROM, name)) as f:
            texts.append(f.read())
    texts += dashboard_exprs()
    used = set()
    for t in texts:
        used |= set(re.findall(r"(?<![\w:])(stride_[a-z0-9_]+)", t))
    # Recording rule names (job:stride_...:...) are skipped by the look-behind.
    missing = sorted(used - exported)
    assert not missing, f"names the server does not export: {missing}"
    assert len(used) >= 15


def test_dashboard_recording_rule_names_exist():
    with open(os.path.join(PROM, "stride-rules.yml")) as f:
        rules_text = f.read()
    recorded = set(re.findall(r"- record: (\S+)", rules_text))
    used = set(re.findall(r"\b((?:job|instance):stride_[\w:]+)", rules_text + "\n".join(dashboard_exprs())))
    assert used - recorded == set(), f"recording rules used but not defined: {sorted(used - recorded)}"
