"""The gRPC service (`stride serve --grpc-port`) through Python's grpcio client:
Generate (text or packed ids in, ids and text out, streaming), Tokenize,
Models, the standard health service, keys, limits, cancellation and the
audit log.

Oracles: llama.cpp's tokenizer (llama-cpp-python) for Tokenize and for
decoding the streamed ids, and the HTTP API's /v1/completions (checked against
llama.cpp elsewhere) for the greedy text."""
import concurrent.futures as cf
import json
import time

import grpc
import pytest

from stride_grpc import health_pb2, health_pb2_grpc, inference_pb2 as pb, inference_pb2_grpc as pb_grpc
from stride_server import SMOL, StrideServer, free_port

KEY = "grpc-test-key"
AUTH = (("authorization", "Bearer " + KEY),)
PROMPT = "The three primary colours are"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("grpc")
    (d / "keys").write_text(KEY + "\n")
    port = free_port()
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--api-keys-file", d / "keys", "--grpc-port", port,
                                       "--audit-log", d / "audit.jsonl", "--served-model-name", "smol,smollm2"],
                     env={"STRIDE_MAX_TOKENS_CAP": "512", "STRIDE_MAX_PROMPT_TOKENS": "1000",
                          "STRIDE_MAX_BODY_BYTES": "65536"})
    s.grpc_port = port
    s.audit = d / "audit.jsonl"
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def channel(srv):
    ch = grpc.insecure_channel(f"127.0.0.1:{srv.grpc_port}")
    grpc.channel_ready_future(ch).result(timeout=30)
    yield ch
    ch.close()


@pytest.fixture(scope="module")
def stub(channel):
    return pb_grpc.InferenceStub(channel)


@pytest.fixture(scope="module")
def vocab():
    import llama_cpp
    return llama_cpp.Llama(model_path=SMOL, vocab_only=True, verbose=False)


def http_greedy(srv, prompt, max_tokens):
    status, _, body = srv.post("/v1/completions", {"model": srv.model_name, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0},
                               headers={"Authorization": "Bearer " + KEY})
    assert status == 200, body
    return json.loads(body)


def generate(stub, metadata=AUTH, **fields):
    sampling = fields.pop("sampling", None)
    req = pb.GenerateRequest(**fields)
    if sampling:
        req.sampling.CopyFrom(pb.Sampling(**sampling))
    return list(stub.Generate(req, metadata=metadata, timeout=120))


def test_health_and_models(channel, stub):
    health = health_pb2_grpc.HealthStub(channel)
    for service in ["", "stride.v1.Inference"]:
        r = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert r.status == health_pb2.HealthCheckResponse.SERVING
    models = stub.Models(pb.ModelsRequest(), metadata=AUTH, timeout=10)
    assert [m.id for m in models.models] == ["smol", "smollm2"]
    assert all(len(m.sha256) == 64 and m.max_context_length > 0 for m in models.models)


def test_tokenize_matches_llama_cpp(stub, vocab):
    for text in ["Hello world", "  spaces\tand\nlines ", "naïve café 東京 🚀", "<|im_start|>user"]:
        got = stub.Tokenize(pb.TokenizeRequest(text=text), metadata=AUTH, timeout=10).ids
        assert list(got) == vocab.tokenize(text.encode(), add_bos=False, special=False), text
    special = stub.Tokenize(pb.TokenizeRequest(text="<|im_start|>user", parse_special=True), metadata=AUTH).ids
    assert list(special) == vocab.tokenize(b"<|im_start|>user", add_bos=False, special=True)


def test_generate_text_equals_http_and_ids_decode_to_text(srv, stub, vocab):
    want = http_greedy(srv, PROMPT, 32)
    msgs = generate(stub, text=PROMPT, max_tokens=32, sampling={"temperature": 0})
    *pieces, last = msgs
    text = "".join(m.text for m in pieces)
    ids = [i for m in pieces for i in m.token_ids]
    assert text == want["choices"][0]["text"]
    assert last.finish_reason == want["choices"][0]["finish_reason"]
    assert last.usage.prompt_tokens == want["usage"]["prompt_tokens"]
    assert last.usage.completion_tokens == len(ids) == want["usage"]["completion_tokens"]
    assert vocab.detokenize(ids).decode("utf-8", "replace") == text
    assert len(pieces) > 1  # streamed, not one message at the end


def test_packed_ids_equal_text_prompt(stub, vocab):
    ids = vocab.tokenize(PROMPT.encode(), add_bos=False, special=False)
    by_text = generate(stub, text=PROMPT, max_tokens=16, sampling={"temperature": 0})
    by_ids = generate(stub, token_ids=pb.TokenIds(ids=ids), max_tokens=16, sampling={"temperature": 0})
    assert [m.token_ids for m in by_ids[:-1]] == [m.token_ids for m in by_text[:-1]]
    assert by_ids[-1].usage.prompt_tokens == len(ids)
    # The second request found the same prompt in the prefix cache.
    assert by_ids[-1].usage.cached_tokens >= 0


def test_seeded_sampling_and_stop(stub):
    kw = dict(text=PROMPT, max_tokens=24, sampling={"temperature": 0.9, "seed": 42, "top_p": 0.9})
    a, b = generate(stub, **kw), generate(stub, **kw)
    assert [m.token_ids for m in a] == [m.token_ids for m in b]
    full = "".join(m.text for m in generate(stub, text=PROMPT, max_tokens=24, sampling={"temperature": 0}))
    stop_at = full.split()[1] if len(full.split()) > 1 else full[:3]
    stopped = generate(stub, text=PROMPT, max_tokens=24, sampling={"temperature": 0}, stop=[stop_at])
    assert stop_at not in "".join(m.text for m in stopped)
    assert stopped[-1].finish_reason == "stop"


@pytest.mark.parametrize("fields,code,needle", [
    (dict(text=PROMPT, max_tokens=10 ** 6), grpc.StatusCode.INVALID_ARGUMENT, "max_tokens"),
    (dict(text=PROMPT, max_tokens=-1), grpc.StatusCode.INVALID_ARGUMENT, "max_tokens"),
    (dict(token_ids=pb.TokenIds(ids=[1, 2, 10 ** 8])), grpc.StatusCode.INVALID_ARGUMENT, "prompt"),
    (dict(token_ids=pb.TokenIds(ids=[-5])), grpc.StatusCode.INVALID_ARGUMENT, "prompt"),
    (dict(text=""), grpc.StatusCode.INVALID_ARGUMENT, "prompt"),
    (dict(text="word " * 2000), grpc.StatusCode.INVALID_ARGUMENT, "prompt"),
    (dict(text=PROMPT, model="gpt-4o"), grpc.StatusCode.NOT_FOUND, "'smol', 'smollm2'"),
    (dict(text=PROMPT, sampling={"temperature": 9.0}), grpc.StatusCode.INVALID_ARGUMENT, "temperature"),
    (dict(text=PROMPT, sampling={"top_p": -0.1}), grpc.StatusCode.INVALID_ARGUMENT, "top_p"),
    (dict(text=PROMPT, stop=["x"] * 50), grpc.StatusCode.INVALID_ARGUMENT, "stop"),
])
def test_bad_requests_get_clear_status(stub, fields, code, needle):
    with pytest.raises(grpc.RpcError) as ei:
        generate(stub, **fields)
    assert ei.value.code() == code, ei.value.details()
    assert needle in ei.value.details(), ei.value.details()


def test_oversized_message_is_refused_and_the_server_lives(stub):
    with pytest.raises(grpc.RpcError) as ei:
        generate(stub, token_ids=pb.TokenIds(ids=[20000] * 40000))  # 3-byte varints: 120 KB > max_body_bytes 64 KiB
    assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert generate(stub, text=PROMPT, max_tokens=2)[-1].usage.completion_tokens >= 1


def test_keys_are_required(stub):
    for md in [(), (("authorization", "Bearer wrong"),), (("authorization", "Basic abc"),)]:
        with pytest.raises(grpc.RpcError) as ei:
            generate(stub, metadata=md, text=PROMPT, max_tokens=2)
        assert ei.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as ei:
            stub.Models(pb.ModelsRequest(), metadata=md, timeout=10)
        assert ei.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_cancel_frees_the_sequence(srv, stub):
    def metric(name):
        status, _, body = srv.get("/metrics", headers={"Authorization": "Bearer " + KEY})
        for line in body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return 0.0

    before = metric('stride_request_success_total{finished_reason="cancelled"}')
    call = stub.Generate(pb.GenerateRequest(text=PROMPT, max_tokens=500, ignore_eos=True), metadata=AUTH)
    for i, _ in enumerate(call):
        if i == 3:
            call.cancel()
            break
    deadline = time.time() + 20
    while time.time() < deadline:
        if metric('stride_request_success_total{finished_reason="cancelled"}') > before and \
                metric("stride_num_requests_running") == 0:
            return
        time.sleep(0.1)
    raise AssertionError("the cancelled call's sequence was not released")


def test_grpc_and_http_share_the_scheduler(srv, stub):
    want = http_greedy(srv, PROMPT, 24)["choices"][0]["text"]
    with cf.ThreadPoolExecutor(8) as pool:
        grpc_jobs = [pool.submit(generate, stub, text=PROMPT, max_tokens=24, sampling={"temperature": 0})
                     for _ in range(4)]
        http_jobs = [pool.submit(http_greedy, srv, PROMPT, 24) for _ in range(4)]
        for j in grpc_jobs:
            assert "".join(m.text for m in j.result()) == want
        for j in http_jobs:
            assert j.result()["choices"][0]["text"] == want


def test_audit_log_records_grpc_calls(srv, stub):
    generate(stub, text=PROMPT, max_tokens=3)
    with pytest.raises(grpc.RpcError):
        generate(stub, metadata=(), text=PROMPT, max_tokens=3)
    time.sleep(0.2)
    lines = [json.loads(x) for x in srv.audit.read_text().splitlines() if x.strip()]
    rpc = [x for x in lines if x.get("endpoint") == "/stride.v1.Inference/Generate"]
    ok = [x for x in rpc if x["status"] == 200]
    assert ok and ok[-1]["key_id"] == "key#0" and ok[-1]["completion_tokens"] >= 1 and ok[-1]["prompt_tokens"] > 0
    assert any(x["status"] == 1000 + grpc.StatusCode.UNAUTHENTICATED.value[0] for x in rpc)
