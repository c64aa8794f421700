"""Prefix cache in the server: chat requests sharing a long system prompt
reuse its KV pages (the /metrics prefix-cache counters say so) and produce
exactly the greedy output of a server with the cache off (cache_reuse false)."""
import openai

from stride_server import SMOL, StrideServer

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"

SYSTEM = (
    "You are the archivist of a small river town. You answer questions about the town's ledgers, "
    "which record the harvests, the bridge tolls, the weather of every season and the names of the "
    "clerks who kept them. Answer briefly and plainly, in one or two sentences, and never invent "
    "records that are not in the ledgers. If a question is about something the ledgers do not cover, "
    "say so. The ledgers begin in the year the stone bridge was built and end with the great flood, "
    "when the lower shelves of the archive were lost. Spell out numbers below ten and write larger "
    "numbers as digits. Refer to the town as 'the town' and to the river as 'the river'."
)
QUESTIONS = ["How many barrels of apples were counted last autumn?", "Who kept the ledgers during the flood?"]


def chat(url, question, max_tokens=24):
    c = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=300)
    r = c.chat.completions.create(
        model=MODEL,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
        max_tokens=max_tokens, temperature=0, extra_body={"ignore_eos": True})
    return r.choices[0].message.content, r.usage.prompt_tokens


def run_all(env):
    with StrideServer(SMOL, env=env) as s:
        outs = []
        snapshots = []
        for q in QUESTIONS + QUESTIONS[:1]:  # the last repeats the first request exactly
            outs.append(chat(s.url, q))
            snapshots.append(s.metrics())
        return outs, snapshots


def test_shared_system_prompt_hits_and_matches_uncached():
    cached, m = run_all({})
    plain, m_plain = run_all({"STRIDE_CACHE_REUSE": "false"})

    prompt_tokens = [p for _, p in cached]
    assert prompt_tokens[0] > 160, prompt_tokens  # several 32-token pages of shared prefix
    # First request: looked up, nothing cached yet.
    assert m[0]["stride_prefix_cache_queries_total"] == prompt_tokens[0]
    assert m[0]["stride_prefix_cache_hits_total"] == 0
    assert m[0]["stride_kv_cache_pages_cached"] > 0
    assert m[0]["stride_kv_cache_pages_used"] == 0
    # Second request: the system prompt's whole pages come from the cache.
    hits_2 = m[1]["stride_prefix_cache_hits_total"]
    assert hits_2 >= 128 and hits_2 % 32 == 0, hits_2
    assert hits_2 < prompt_tokens[1]
    assert m[1]["stride_prefix_cache_queries_total"] == prompt_tokens[0] + prompt_tokens[1]
    # The repeated request reuses all but the last (partial) page of its prompt.
    hits_3 = m[2]["stride_prefix_cache_hits_total"] - hits_2
    assert hits_3 == (prompt_tokens[0] - 1) // 32 * 32, (hits_3, prompt_tokens[0])
    assert m[2]["stride_kv_cache_pages_used"] == 0

    # The cache off: no lookups, no cached pages, and the same greedy text.
    assert m_plain[-1]["stride_prefix_cache_queries_total"] == 0
    assert m_plain[-1]["stride_kv_cache_pages_cached"] == 0
    assert [t for t, _ in cached] == [t for t, _ in plain]
    assert cached[0][0] == cached[2][0]
