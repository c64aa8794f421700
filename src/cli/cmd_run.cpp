// `stride run`: generate text from a prompt, streaming it to stdout.
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/head_type_option.h"
#include "cli/rope_options.h"
#include "cli/commands.h"
#include "cli/run_sharded.h"
#include "kv/shard_layout.h"
#include "serving/kv_metrics.h"

namespace stride::cli {

namespace {

struct RunArgs {
  ModelRunOptions model;
  std::string prompt;
  std::string prompt_ids;
  std::string prompt_ids_file;
  int max_tokens = 128;
  float temperature = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  float frequency_penalty = 0.f;
  float presence_penalty = 0.f;
  uint64_t seed = 0xC0FFEE;
  std::vector<std::string> stop;
  bool json = false;
  bool no_bos = false;
  bool ignore_eos = false;
  bool profile_ops = false;
  std::string speculative = "off";
  std::string draft_model;
  int draft_max = 8;
  int draft_min = 1;
  int ngram_min = 1;
  int ngram_max = 3;
  ShardArgs shard;
};

// The decode steps' op profile (model/op_profile.h): totals over all steps.
nlohmann::json op_profile_json(const OpProfile& p) {
  nlohmann::json ops = nlohmann::json::array();
  for (const OpProfile::Entry& e : p.entries())
    ops.push_back({{"op", e.op}, {"calls", e.calls}, {"seconds", e.seconds}, {"cpu_seconds", e.cpu_seconds},
                   {"weight_bytes", e.bytes}});
  return {{"steps", p.steps()}, {"step_seconds", p.step_seconds()}, {"ops", ops}};
}

int run(const RunArgs& a) {
  if ((int)!a.prompt.empty() + (int)!a.prompt_ids.empty() + (int)!a.prompt_ids_file.empty() != 1)
    return fail("give exactly one of --prompt, --prompt-ids or --prompt-ids-file");
  if (a.max_tokens < 0) return fail("--max-tokens must be >= 0");
  auto engine_opts = to_engine_options(a.model, 0);
  if (!engine_opts) return fail(engine_opts.status());
  engine_opts->draft_model_path = a.draft_model;
  auto spec_mode = parse_speculative_mode(a.speculative);
  if (!spec_mode) return fail(spec_mode.status());
  if (Status st = check_shard_args(a.shard); !st.ok()) return fail(st);

  // The KV pool is sized once the prompt length is known.
  std::vector<int32_t> prompt;
  std::unique_ptr<Engine> engine;
  if (!a.prompt_ids.empty() || !a.prompt_ids_file.empty()) {
    // A long prompt's ids overflow one command-line argument (128 KiB on Linux): a file holds them.
    auto text = a.prompt_ids_file.empty() ? Expected<std::string>(a.prompt_ids) : read_text(a.prompt_ids_file);
    if (!text) return fail(text.status());
    auto ids = parse_ids(*text);
    if (!ids) return fail(ids.status());
    prompt = std::move(*ids);
  }
  const int64_t guess = (int64_t)(prompt.empty() ? a.prompt.size() + 8 : prompt.size()) + a.max_tokens;
  if (a.model.max_context <= 0) engine_opts->max_context = guess;
  ShardArgs shard = a.shard;  // its layout resolved from the context
  shard.shard_tokens =
      resolve_shard_tokens(a.shard.shard_tokens, engine_opts->max_context, shard.world, engine_opts->page_size);
  if (shard.sharded())  // a rank's pool holds its shard, not the whole context
    engine_opts->kv_tokens = shard_kv_tokens(guess - a.max_tokens, shard.world, engine_opts->page_size, a.max_tokens,
                                             shard.shard_tokens);
  const auto load_start = std::chrono::steady_clock::now();
  auto created = Engine::create(*engine_opts);
  if (!created) return fail(created.status());
  engine = std::move(*created);
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  if (engine_opts->head_type != HeadType::File)
    std::fprintf(stderr, "output head: %s (--head-type %s)\n", dtype_name(engine->model().head_type()),
                 head_type_name(engine_opts->head_type));
  if (prompt.empty()) {
    const Tokenizer* tok = engine->tokenizer();
    if (!tok) return fail("this model has no tokenizer; use --prompt-ids");
    prompt = tok->encode(a.prompt, !a.no_bos && tok->add_bos_default());
  }
  if ((int64_t)prompt.size() + a.max_tokens > engine_opts->max_context) {
    return fail("prompt (" + std::to_string(prompt.size()) + " tokens) + max tokens exceeds the context (" +
                std::to_string(engine_opts->max_context) + ")");
  }

  GenerateOptions g;
  g.max_tokens = a.max_tokens;
  g.ignore_eos = a.ignore_eos;
  g.stop = a.stop;
  g.sampling.temperature = a.temperature;
  g.sampling.top_k = a.top_k;
  g.sampling.top_p = a.top_p;
  g.sampling.min_p = a.min_p;
  g.sampling.repeat_penalty = a.repeat_penalty;
  g.sampling.frequency_penalty = a.frequency_penalty;
  g.sampling.presence_penalty = a.presence_penalty;
  g.sampling.seed = a.seed;
  g.speculative.mode = *spec_mode;
  g.speculative.draft_max = a.draft_max;
  g.speculative.draft_min = a.draft_min;
  g.speculative.ngram_min = a.ngram_min;
  g.speculative.ngram_max = a.ngram_max;

  if (shard.sharded()) return run_sharded(shard, *engine, prompt, g, a.json);
  OpProfile profile;
  if (a.profile_ops) engine->model().set_op_profile(&profile);
  auto result = engine->generate(prompt, g, [](const std::string& piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  engine->model().set_op_profile(nullptr);
  if (!result) return fail(result.status());
  const GenerateResult& r = *result;
  std::fputc('\n', stdout);
  if (a.json) {
    nlohmann::json j;
    j["generated_ids"] = r.generated_ids;
    j["logprobs"] = r.logprobs;
    j["text"] = r.text;
    j["finish_reason"] = finish_reason_name(r.finish);
    j["prompt_tokens"] = r.prompt_tokens;
    j["generated_tokens"] = r.generated_ids.size();
    j["prefill_tok_s"] = r.prefill_seconds > 0 ? r.prompt_tokens / r.prefill_seconds : 0.0;
    const size_t decoded = r.generated_ids.empty() ? 0 : r.generated_ids.size() - 1;
    j["decode_tok_s"] = r.decode_seconds > 0 ? decoded / r.decode_seconds : 0.0;
    j["load_seconds"] = load_seconds;  // open, map, repack and allocate: Engine::create
    j["prefill_seconds"] = r.prefill_seconds;
    j["decode_seconds"] = r.decode_seconds;
    j["decode_cpu_seconds"] = r.decode_cpu_seconds;
    j["peak_kv_bytes"] = r.peak_kv_bytes;
    j["decode_pages_read"] = r.decode_pages_read;
    j["decode_pages_present"] = r.decode_pages_present;
    j["speculative"] = speculative_mode_name(g.speculative.mode);
    j["drafted_tokens"] = r.drafted_tokens;
    j["accepted_tokens"] = r.accepted_tokens;
    j["verify_steps"] = r.verify_steps;
    j["peak_rss_bytes"] = peak_rss_bytes();
    j["attention"] = a.model.attention;
    j["threads"] = engine->pool().size();
    j["head_type"] = dtype_name(engine->model().head_type());
    // Every KV counter, under its metric name (the rows /metrics publishes).
    nlohmann::json kv;
    serving::for_each_kv_metric(engine->kv().stats(), [&](const char* name, const char*, const char*, int64_t value) {
      kv[name] = value;
    });
    j["kv"] = kv;
    if (a.profile_ops) j["op_profile"] = op_profile_json(profile);
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt, streamed to stdout");
  cmd->add_option("--model,-m", args->model.model, "GGUF file or HF folder")->required();
  add_rope_options(cmd, args->model.rope);
  add_head_type_option(cmd, args->model.head_type);
  cmd->add_option("--prompt,-p", args->prompt, "prompt text");
  cmd->add_option("--prompt-ids", args->prompt_ids, "prompt as token ids (\"1 2 3\"); no BOS is added");
  cmd->add_option("--prompt-ids-file", args->prompt_ids_file, "file of the prompt's token ids, as --prompt-ids");
  cmd->add_option("--max-tokens,-n", args->max_tokens, "tokens to generate")->capture_default_str();
  cmd->add_option("--temperature,-t", args->temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", args->top_k)->capture_default_str();
  cmd->add_option("--top-p", args->top_p)->capture_default_str();
  cmd->add_option("--min-p", args->min_p)->capture_default_str();
  cmd->add_option("--speculative", args->speculative, "speculative decoding: off | prompt-lookup | draft")
      ->capture_default_str();
  cmd->add_option("--draft-model", args->draft_model, "draft model (GGUF, same vocabulary) for --speculative draft");
  cmd->add_option("--draft-max", args->draft_max, "tokens drafted per step at most")->capture_default_str();
  cmd->add_option("--draft-min", args->draft_min, "fewer drafts found: decode plainly")->capture_default_str();
  cmd->add_option("--lookup-ngram-min", args->ngram_min, "prompt lookup: shortest n-gram")->capture_default_str();
  cmd->add_option("--lookup-ngram-max", args->ngram_max, "prompt lookup: longest n-gram")->capture_default_str();
  cmd->add_option("--repeat-penalty", args->repeat_penalty)->capture_default_str();
  cmd->add_option("--frequency-penalty", args->frequency_penalty)->capture_default_str();
  cmd->add_option("--presence-penalty", args->presence_penalty)->capture_default_str();
  cmd->add_option("--seed", args->seed, "sampling seed")->capture_default_str();
  cmd->add_option("--stop", args->stop, "stop string (repeatable)");
  cmd->add_option("--attention,-a", args->model.attention,
                  "policy for global layers: dense | window:size=W | rswa:sinks=S,window=W")
      ->capture_default_str();
  cmd->add_option("--threads", args->model.threads, "0 = all cores")->capture_default_str();
  cmd->add_option("--layer-attention", args->model.layer_policies,
                  "per-layer policy A-B=POLICY, repeatable; wins over --attention and native windows");
  cmd->add_option("--kv-type", args->model.kv_type, "KV storage: f16, f32 (exact) or int8 (half the bytes)")->capture_default_str();
  cmd->add_option("--kv-budget", args->model.kv_budget, "KV pool size, e.g. 512M (default: sized for the context)");
  cmd->add_option("--ctx-size,-c", args->model.max_context, "max tokens of context (default: prompt + max tokens)");
  cmd->add_flag("--json", args->json, "end with one JSON object of ids and figures");
  cmd->add_flag("--no-bos", args->no_bos, "do not add BOS even if the model asks for it");
  cmd->add_flag("--ignore-eos", args->ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--profile-ops", args->profile_ops,
                "time every op of the decode steps; with --json, their totals under \"op_profile\"");
  add_shard_options(cmd, args->shard);
  cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace stride::cli
