"""deploy/k8s, the systemd unit and the Dockerfile, checked offline (no cluster,
no systemd manager and no container engine here): every manifest matches the
Kubernetes schema (the Kubernetes Python client's models), the objects refer
to each other consistently (selectors, ports, ConfigMap/Secret/PVC names, the
HPA target), the probes and the drain use the endpoints stride serves, the
ConfigMap's serving config serves, and systemd-analyze accepts the unit."""
import copy
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from stride_server import ROOT, SMOL, StrideServer, binary

K8S = os.path.join(ROOT, "deploy", "k8s")


def load_kustomization():
    with open(os.path.join(K8S, "kustomization.yaml")) as f:
        kust = yaml.safe_load(f)
    objs = []
    for name in kust["resources"]:
        with open(os.path.join(K8S, name)) as f:
            objs += [d for d in yaml.safe_load_all(f) if d]
    return kust, objs


def by_kind(objs, kind):
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def test_every_manifest_file_is_in_the_kustomization_or_documented_outside():
    kust, _ = load_kustomization()
    listed = set(kust["resources"]) | {f for g in kust["configMapGenerator"] for f in g["files"]}
    outside = {"kustomization.yaml", "prometheus-adapter.yaml"}
    files = {f for f in os.listdir(K8S) if f.endswith(".yaml")}
    assert files - outside == listed, f"unlisted: {sorted(files - outside - listed)}"


def test_objects_are_well_formed():
    _, objs = load_kustomization()
    api = {"Deployment": "apps/v1", "Service": "v1", "Secret": "v1", "PersistentVolumeClaim": "v1",
           "PodDisruptionBudget": "policy/v1", "HorizontalPodAutoscaler": "autoscaling/v2"}
    assert sorted(o["kind"] for o in objs) == sorted(api)
    for o in objs:
        assert o["apiVersion"] == api[o["kind"]], o["kind"]
        name = o["metadata"]["name"]
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) and len(name) <= 63, name


def k8s_model(kind):
    """The Kubernetes Python client's model of a kind (pydantic, generated from
    the Kubernetes OpenAPI spec): unknown fields, wrong types and missing
    required fields are errors."""
    from kubernetes import client
    return {"Deployment": client.V1Deployment, "Service": client.V1Service, "Secret": client.V1Secret,
            "PersistentVolumeClaim": client.V1PersistentVolumeClaim,
            "PodDisruptionBudget": client.V1PodDisruptionBudget,
            "HorizontalPodAutoscaler": client.V2HorizontalPodAutoscaler, "ConfigMap": client.V1ConfigMap}[kind]


def schema_round_trip(obj):
    m = k8s_model(obj["kind"]).model_validate(obj)
    return m.model_dump(by_alias=True, exclude_none=True, mode="json")


def test_objects_match_the_kubernetes_schema():
    kust, objs = load_kustomization()
    with open(os.path.join(K8S, "stride.yaml")) as f:
        objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": kust["configMapGenerator"][0]["name"]},
                     "data": {"stride.yaml": f.read()}})
    for obj in objs:
        # Every field is one the schema knows, with its type, and nothing is lost.
        assert schema_round_trip(obj) == obj, obj["kind"]
    # The same check refuses a misspelled field and a wrong type.
    dep = copy.deepcopy(by_kind(objs, "Deployment"))
    c = dep["spec"]["template"]["spec"]["containers"][0]
    c["readinesProbe"] = c.pop("readinessProbe")
    with pytest.raises(ValueError, match="readinesProbe"):
        schema_round_trip(dep)
    dep = copy.deepcopy(by_kind(objs, "Deployment"))
    dep["spec"]["replicas"] = "three"
    with pytest.raises(ValueError, match="replicas"):
        schema_round_trip(dep)


def test_selectors_ports_and_references_agree():
    kust, objs = load_kustomization()
    dep = by_kind(objs, "Deployment")
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    for sel in (dep["spec"]["selector"]["matchLabels"], by_kind(objs, "PodDisruptionBudget")["spec"]["selector"]
                ["matchLabels"], by_kind(objs, "Service")["spec"]["selector"]):
        assert sel.items() <= pod_labels.items(), sel
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    port_names = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert by_kind(objs, "Service")["spec"]["ports"][0]["targetPort"] in port_names
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert {m["name"] for m in c["volumeMounts"]} == set(vols)
    assert vols["config"]["configMap"]["name"] == kust["configMapGenerator"][0]["name"]
    assert vols["api-keys"]["secret"]["secretName"] == by_kind(objs, "Secret")["metadata"]["name"]
    assert vols["models"]["persistentVolumeClaim"]["claimName"] == \
        by_kind(objs, "PersistentVolumeClaim")["metadata"]["name"]
    target = by_kind(objs, "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", dep["metadata"]["name"])
    assert by_kind(objs, "HorizontalPodAutoscaler")["spec"]["minReplicas"] >= 2


def test_probes_and_drain_use_what_stride_serves():
    _, objs = load_kustomization()
    dep = by_kind(objs, "Deployment")
    spec = dep["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    assert c["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert c["livenessProbe"]["httpGet"]["path"] == "/health"
    assert c["startupProbe"]["httpGet"]["path"] == "/health"
    pre_stop = c["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep" and int(pre_stop[1]) >= 5
    with open(os.path.join(K8S, "stride.yaml")) as f:
        cfg = yaml.safe_load(f)
    # The grace period covers the preStop sleep plus the longest request the drain waits for.
    assert spec["terminationGracePeriodSeconds"] >= int(pre_stop[1]) + cfg["request_timeout_s"]
    assert dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert c["args"][:3] == ["serve", "--config", "/etc/stride/stride.yaml"]
    assert cfg["port"] == c["ports"][0]["containerPort"]
    # stride counts the node's cores, not the pod's share: the config names the share.
    assert cfg["threads"] == int(c["resources"]["requests"]["cpu"])


def test_hpa_custom_metrics_are_exported_names():
    _, objs = load_kustomization()
    hpa = by_kind(objs, "HorizontalPodAutoscaler")
    names = {m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"}
    with open(os.path.join(K8S, "prometheus-adapter.yaml")) as f:
        adapter = yaml.safe_load(f)
    served = {r["name"]["as"] for r in adapter["rules"]}
    assert names and names <= served
    src = open(os.path.join(ROOT, "src", "serving", "metrics.cpp")).read()
    for n in names:
        assert f'"{n}"' in src, n


def test_configmap_config_serves(tmp_path):
    """The ConfigMap's serving config, with the pod's paths replaced by temporary
    ones (and loopback for the bind): the server starts on the pinned version and
    asks for the key from the mounted keys file."""
    with open(os.path.join(K8S, "stride.yaml")) as f:
        cfg = yaml.safe_load(f)
    keys = tmp_path / "api_keys"
    keys.write_text("k8s-test-key\n")
    models = tmp_path / "models"
    subprocess.run([binary(), "model", "publish", "--model-dir", str(models), "--version", cfg["model_version"],
                    SMOL], check=True, capture_output=True, timeout=300)
    cfg.update({"api_keys_file": str(keys), "model_dir": str(models), "host": "127.0.0.1", "kv_budget": "64M"})
    path = tmp_path / "stride.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with StrideServer(model=None, config=str(path)) as srv:
        status, _, body = srv.get("/v1/models", headers={"Authorization": "Bearer k8s-test-key"})
        assert status == 200 and json.loads(body)["data"][0]["version"] == cfg["model_version"]
        status, _, _ = srv.get("/v1/models")
        assert status == 401


def test_dockerfile_is_multi_stage_non_root_with_a_health_check():
    with open(os.path.join(ROOT, "Dockerfile")) as f:
        text = f.read()
    stages = re.findall(r"^FROM \S+(?: AS (\w+))?", text, re.M)
    assert stages[:3] == ["build", "runtime", "baked"] and len(stages) == 4
    assert re.search(r"^USER 10001", text, re.M)
    assert re.search(r"^HEALTHCHECK .*\n\s+CMD curl -fsS http://127.0.0.1:8080/health", text, re.M)
    assert "-DSTRIDE_NATIVE" not in text.replace("STRIDE_NATIVE stays OFF", "")
    with open(os.path.join(ROOT, "scripts", "setup")) as f:
        runtime_pkgs = re.search(r"RUNTIME_PKGS=\(([^)]*)\)", f.read()).group(1).split()
    build_pkgs = re.search(r"FROM \S+ AS build\nRUN apt-get update \\\n.*?install -y --no-install-recommends \\\n"
                           r"(.*?)\s*&& rm", text, re.S).group(1).replace("\\", " ").split()
    # The image builds with what scripts/setup --runtime installs (less the venv it needs for models).
    assert set(runtime_pkgs) - {"python3-venv"} == set(build_pkgs)


def test_systemd_unit_verifies_and_is_hardened(tmp_path):
    """systemd-analyze checks the unit offline (with ExecStart pointed at the
    built binary): it parses, its commands exist, and its exposure score is
    at most 2.0 ("OK", --threshold counts tenths); the stop drains and the reload is SIGHUP."""
    with open(os.path.join(ROOT, "deploy", "systemd", "stride.service")) as f:
        text = f.read()
    assert re.search(r"^ExecReload=/bin/kill -HUP \$MAINPID$", text, re.M)
    assert re.search(r"^KillSignal=SIGTERM$", text, re.M)
    assert int(re.search(r"^TimeoutStopSec=(\d+)$", text, re.M).group(1)) >= 600
    unit = tmp_path / "stride.service"
    unit.write_text(text.replace("/opt/stride/bin/stride", binary()))
    tool = shutil.which("systemd-analyze")
    assert tool, "systemd-analyze missing: scripts/setup installs the 'systemd' package"
    p = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr
    p = subprocess.run([tool, "security", "--offline=yes", "--threshold=20", "--no-pager", str(unit)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr
    level = float(re.search(r"Overall exposure level for \S+: ([\d.]+)", p.stdout).group(1))
    assert level <= 2.0
