// `stride plan`: memory needed by a model at a context length and batch under
// a policy (weights, KV, peak activations), the largest context and batch a
// budget allows, the seed planner's formula beside ours, and what each host
// of a shard set needs for one long sequence (plan_hosts.h).
#include <cstdio>
#include <memory>
#include <string>
#include <nlohmann/json.hpp>

#include "attention/layer_policies.h"
#include "cli/cli_common.h"
#include "cli/rope_options.h"
#include "cli/commands.h"
#include "cli/plan_hosts.h"
#include "eval/memory_plan.h"
#include "kv/store/kv_pool.h"
#include "loader/model_source.h"

namespace stride::cli {

namespace {

struct PlanArgs {
  ModelRunOptions model;
  int64_t context = 8192;
  int64_t batch = 1;
  std::string budget;
  int chunk = 256;
  bool json = false;
  int hosts = 0;            // > 0: each rank's need on this many hosts
  std::string host_memory;  // bytes per host: the fewest hosts that hold the context
};

std::string human(int64_t b) {
  char buf[32];
  const double x = (double)b;
  if (x >= 1e9) std::snprintf(buf, sizeof buf, "%.2f GB", x / 1e9);
  else if (x >= 1e6) std::snprintf(buf, sizeof buf, "%.2f MB", x / 1e6);
  else if (x >= 1e3) std::snprintf(buf, sizeof buf, "%.2f KB", x / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld B", (long long)b);
  return buf;
}

std::string cut_text(const std::vector<int64_t>& b) {
  std::string cut;
  for (size_t r = 0; r + 1 < b.size(); ++r)
    cut += (r ? " " : "") + std::string("[") + std::to_string(b[r]) + ", " + std::to_string(b[r + 1]) + ")";
  return cut;
}

nlohmann::json cut_json(const CutProjection& p) {
  return {{"boundaries", p.boundaries}, {"prefill_speedup", p.prefill_speedup}, {"decode_speedup", p.decode_speedup}};
}

// Which cut suits which work: the layout's equal runs spread a decode step's
// keys evenly, the balanced cut the prefill.
void print_cut_choice(const HostPlan& h) {
  if (h.hosts < 2) return;
  std::printf("cuts       a prompt of the whole context, projected over one host by the cost model: the layout %s: "
              "prefill %.2fx, decode %.2fx; --shard-tokens 0 %s: prefill %.2fx, decode %.2fx\n",
              cut_text(h.layout_cut.boundaries).c_str(), h.layout_cut.prefill_speedup, h.layout_cut.decode_speedup,
              cut_text(h.prefill_cut.boundaries).c_str(), h.prefill_cut.prefill_speedup,
              h.prefill_cut.decode_speedup);
  const CutProjection &layout = h.layout_cut, &balanced = h.prefill_cut;
  const bool trade = (layout.decode_speedup > balanced.decode_speedup) != (layout.prefill_speedup > balanced.prefill_speedup);
  if (!trade) return;  // one cut is as fast in both phases (windows, R-SWA)
  std::printf("           long prompts with short answers: the cut with the faster prefill; long generations: the one "
              "with the faster decode (docs/deploy.md, \"Which cut\")\n");
}

// The layout the shard set cuts prompts by (kv/shard_layout.h), as --shard-tokens auto derives it.
void print_shard_layout(const HostPlan& h, int64_t context) {
  if (h.hosts < 2) return;
  const std::string cut = cut_text(h.balanced_boundaries);
  if (h.shard_tokens == 0) {
    std::printf("layout     balanced by prefill cost (a rank's share of the context is under a kernel segment): "
                "%lld tokens cut %s\n", (long long)h.balanced_tokens, cut.c_str());
    return;
  }
  const long long s = (long long)h.shard_tokens;
  std::printf("layout     --shard-tokens auto = %lld: ranks 0..%d hold [r*%lld, (r+1)*%lld), rank %d the rest "
              "(%lld tokens at %lld); prompts of %lld tokens or fewer are cut balanced\n",
              s, h.hosts - 2, s, s, h.hosts - 1, (long long)(context - (h.hosts - 1) * h.shard_tokens),
              (long long)context, (long long)(h.hosts - 1) * s);
  std::printf("balanced   by prefill cost, on kernel segments: %lld tokens cut %s\n", (long long)h.balanced_tokens,
              cut.c_str());
}

int plan(const PlanArgs& a) {
  if (a.context < 1 || a.batch < 1) return fail("--context and --batch must be >= 1");
  auto policy = parse_policy(a.model.attention);
  if (!policy) return fail(policy.status());
  auto source = open_model(a.model.model, a.model.rope);
  if (!source) return fail(source.status());
  const ModelConfig& c = (*source)->config;
  LayerPolicyOverrides overrides;
  for (const std::string& t : a.model.layer_policies) {
    const Status st = parse_layer_override(t, c.n_layer, overrides);
    if (!st.ok()) return fail(st);
  }
  MemoryPlanInput in;
  in.config = c;
  in.weight_bytes = (*source)->weight_bytes();
  in.layer_policies = resolve_layer_policies(c, *policy, overrides);
  in.context = a.context;
  in.batch = a.batch;
  in.page_size = a.model.page_size;
  in.prefill_chunk = a.chunk;
  auto storage = parse_kv_storage(a.model.kv_type);
  if (!storage) return fail(storage.status());
  in.kv_storage = *storage;
  const MemoryPlan m = plan_memory(in);
  // One page's bytes spread over its tokens: int8 includes its per-token scales.
  const KvPoolShape shape{c.n_head_kv, c.head_dim, c.head_dim_v, 1, in.kv_storage};
  const int64_t kv_per_token = (int64_t)c.n_layer * shape.bytes_per_page();

  nlohmann::json j;
  j["policy"] = policy_to_string(*policy);
  j["kv_type"] = kv_storage_name(in.kv_storage);
  j["context"] = a.context;
  j["batch"] = a.batch;
  j["weight_bytes"] = m.weight_bytes;
  j["kv_bytes"] = m.kv_bytes;
  j["key_code_bytes"] = m.key_code_bytes;
  j["activation_bytes"] = m.activation_bytes;
  j["total_bytes"] = m.total_bytes;
  j["kv_bytes_per_token_dense"] = kv_per_token;
  j["seed_formula_bytes"] = m.seed_formula_bytes;
  int64_t budget = 0;
  if (!a.budget.empty()) {
    auto b = parse_bytes(a.budget);
    if (!b) return fail(b.status());
    budget = *b;
    constexpr int64_t kCap = (int64_t)1 << 30;  // positions are int32
    j["budget_bytes"] = budget;
    j["largest_context"] = largest_context(in, budget, kCap);
    j["largest_batch"] = largest_batch(in, budget);
  }
  HostPlan hosts;
  const bool sharded = a.hosts > 0 || !a.host_memory.empty();
  if (sharded) {
    if (a.hosts > 0) {
      hosts = plan_hosts(in, a.hosts);
    } else {
      auto mem = parse_bytes(a.host_memory);
      if (!mem) return fail(mem.status());
      auto fewest = fewest_hosts(in, *mem, 4096);
      if (!fewest) return fail(fewest.status());
      hosts = *fewest;
    }
    j["shard"] = {{"hosts", hosts.hosts},
                  {"shard_tokens", hosts.shard_tokens},
                  {"tokens_per_rank", hosts.tokens_per_rank},
                  {"balanced_tokens", hosts.balanced_tokens},
                  {"balanced_boundaries", hosts.balanced_boundaries},
                  {"weight_bytes", hosts.weight_bytes},
                  {"kv_bytes_per_rank", hosts.kv_bytes},
                  {"activation_bytes_per_rank", hosts.activation_bytes},
                  {"ring_bytes_per_rank", hosts.ring_bytes},
                  {"total_bytes_per_rank", hosts.total_bytes},
                  {"layout_cut", cut_json(hosts.layout_cut)},
                  {"prefill_cut", cut_json(hosts.prefill_cut)}};
  }
  if (a.json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model      %s (%d layers, %d kv heads x %d, d_model %d)\n", a.model.model.c_str(),
              c.n_layer, c.n_head_kv, c.head_dim, c.n_embd);
  std::printf("policy     %s, context %lld, batch %lld, kv %s\n", policy_to_string(*policy).c_str(),
              (long long)a.context, (long long)a.batch, kv_storage_name(in.kv_storage));
  std::printf("weights    %14lld  %s\n", (long long)m.weight_bytes, human(m.weight_bytes).c_str());
  std::printf("kv         %14lld  %s  (%lld pages per sequence; dense would be %s/token)\n",
              (long long)m.kv_bytes, human(m.kv_bytes).c_str(), (long long)m.kv_pages_per_seq,
              human(kv_per_token).c_str());
  if (m.key_code_bytes > 0)
    std::printf("  of which %s are rerank_keys=int8's copies of the keys\n", human(m.key_code_bytes).c_str());
  std::printf("activation %14lld  %s  (chunk %d)\n", (long long)m.activation_bytes,
              human(m.activation_bytes).c_str(), a.chunk);
  std::printf("total      %14lld  %s\n", (long long)m.total_bytes, human(m.total_bytes).c_str());
  std::printf("seed formula 4*(W*L + L*d_model) = %lld  %s\n", (long long)m.seed_formula_bytes,
              human(m.seed_formula_bytes).c_str());
  std::printf(
      "  The seed counts an fp32 L x W score matrix and one fp32 activation row per token. We\n"
      "  never build the score matrix (online softmax over KV pages) and prefill runs in chunks,\n"
      "  so activations are O(chunk), not O(L); but the seed leaves out what dominates here: the\n"
      "  KV cache (n_layer x 2 x n_kv_heads x head_dim x 2 bytes per held token) and the weights.\n");
  if (budget > 0) {
    std::printf("budget     %s: largest context %lld (batch %lld), largest batch %lld (context %lld)\n",
                human(budget).c_str(), (long long)j["largest_context"].get<int64_t>(),
                (long long)a.batch, (long long)j["largest_batch"].get<int64_t>(),
                (long long)a.context);
  }
  if (sharded) {
    std::printf("shard set  %d hosts, %lld tokens per rank: weights %s + kv %s + activations %s + ring %s = %s per host\n",
                hosts.hosts, (long long)hosts.tokens_per_rank, human(hosts.weight_bytes).c_str(),
                human(hosts.kv_bytes).c_str(), human(hosts.activation_bytes).c_str(), human(hosts.ring_bytes).c_str(),
                human(hosts.total_bytes).c_str());
    print_shard_layout(hosts, a.context);
    print_cut_choice(hosts);
  }
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "Memory needed at a context and batch under a policy");
  cmd->add_option("--model,-m", args->model.model, "GGUF file or HF folder")->required();
  add_rope_options(cmd, args->model.rope);
  cmd->add_option("--attention,-a", args->model.attention, "attention policy")->capture_default_str();
  cmd->add_option("--layer-attention", args->model.layer_policies, "per-layer policy A-B=POLICY");
  cmd->add_option("--context,-c", args->context, "tokens per sequence")->capture_default_str();
  cmd->add_option("--batch,-b", args->batch, "sequences")->capture_default_str();
  cmd->add_option("--budget", args->budget, "memory budget, e.g. 2G: prints the largest context and batch");
  cmd->add_option("--page-size", args->model.page_size, "KV page size")->capture_default_str();
  cmd->add_option("--chunk", args->chunk, "prefill chunk size")->capture_default_str();
  cmd->add_option("--kv-type", args->model.kv_type, "KV storage: f16, f32 or int8")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "one JSON object");
  auto* hosts = cmd->add_option("--hosts", args->hosts, "a shard set of this many hosts: each rank's need")
                    ->check(CLI::Range(1, 4096));
  cmd->add_option("--host-memory", args->host_memory, "memory per host, e.g. 24G: the fewest hosts a context needs")
      ->excludes(hosts);
  cmd->callback([args, &exit_code] { exit_code = plan(*args); });
}

}  // namespace stride::cli
