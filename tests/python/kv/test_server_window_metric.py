"""Window hit rate (/metrics): the share of attention page reads that hold a
key in the local window of their queries. Under a pure sliding window every
page read is a window page (ratio exactly 1); dense attention has no window
(0); sinks + window reads the sink page outside the window once the sequence
has moved past it (strictly between 0 and 1)."""
import openai
import pytest

from stride_server import SMOL, StrideServer

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = " ".join(f"item{i}" for i in range(120))  # ~ 360 tokens: many 32-token pages


def by_policy(text, metric):
    """{policy: value} of a metric labelled by policy in /metrics text."""
    out = {}
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            out[line.split('policy="')[1].split('"')[0]] = float(line.rsplit(" ", 1)[1])
    return out


def run(policy):
    with StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--attention", policy]) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300)
        r = c.completions.create(model=MODEL, prompt=PROMPT, max_tokens=16, temperature=0,
                                 extra_body={"ignore_eos": True})
        assert r.usage.completion_tokens == 16
        m = s.metrics()
    read = m["stride_attention_pages_read_total"]
    window = m["stride_attention_window_pages_read_total"]
    assert read > 0 and 0 <= window <= read
    assert m["stride_attention_window_hit_ratio"] == pytest.approx(window / read)
    return read, window


def test_window_policy_reads_only_window_pages():
    read, window = run("window:size=64")
    assert window == read


def test_dense_has_no_window():
    _, window = run("dense")
    assert window == 0


def test_sinks_are_reads_outside_the_window():
    read, window = run("rswa:sinks=4,window=64")
    assert 0 < window < read


def test_attention_time_is_reported_by_policy():
    """stride_attention_seconds_total{policy=...}: time goes to the kinds the
    layers run (SmolLM2 with a window policy: only `window`)."""
    import urllib.request
    with StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--attention", "window:size=64"]) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300)
        c.completions.create(model=MODEL, prompt=PROMPT, max_tokens=4, temperature=0)
        text = urllib.request.urlopen(s.url + "/metrics", timeout=30).read().decode()
    seconds = by_policy(text, "stride_attention_seconds_total")
    assert set(seconds) == {"dense", "window", "rswa", "topk", "strided"}
    assert seconds["window"] > 0
    assert all(v == 0 for k, v in seconds.items() if k != "window")


def test_read_share_is_reported_by_policy(tmp_path):
    """stride_attention_read_share{policy=...}: pages read / pages held, per
    layer policy. A mix of dense layers 0-1 and top-k elsewhere: dense reads
    every page it holds (exactly 1), top-k a share strictly below it, and the
    kinds no layer runs report 0."""
    import urllib.request
    cfg = tmp_path / "mix.yaml"
    cfg.write_text('attention: "topk:sparsity=0.75"\nlayer_attention: ["0-1=dense"]\n')
    with StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--config", str(cfg)]) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300)
        c.completions.create(model=MODEL, prompt=PROMPT, max_tokens=8, temperature=0)
        text = urllib.request.urlopen(s.url + "/metrics", timeout=30).read().decode()
    share = by_policy(text, "stride_attention_read_share")
    assert set(share) == {"dense", "window", "rswa", "topk", "strided"}
    assert share["dense"] == pytest.approx(1.0)
    assert 0.1 < share["topk"] < 0.8
    assert share["window"] == share["rswa"] == share["strided"] == 0
