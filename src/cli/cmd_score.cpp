// `stride score`: one forward pass over token ids; writes the logits of every
// position (raw little-endian f32, [n_tokens, n_vocab]) for oracle comparisons.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/rope_options.h"
#include "cli/commands.h"
#include "model/reference_forward.h"

namespace stride::cli {

namespace {

struct ScoreArgs {
  ModelRunOptions model;
  std::string ids;
  std::string ids_file;
  std::string out;
  int chunk = 256;
  bool reference = false;
};

int score(const ScoreArgs& a) {
  if (a.ids.empty() == a.ids_file.empty()) return fail("give exactly one of --ids or --ids-file");
  std::string text = a.ids;
  if (!a.ids_file.empty()) {
    FILE* f = std::fopen(a.ids_file.c_str(), "rb");
    if (!f) return fail("cannot open " + a.ids_file);
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  auto ids = parse_ids(text);
  if (!ids) return fail(ids.status());
  if (ids->empty()) return fail("no token ids given");
  auto opts = to_engine_options(a.model, (int64_t)ids->size());
  if (!opts) return fail(opts.status());
  opts->prefill_chunk = a.chunk;
  auto engine = Engine::create(*opts);
  if (!engine) return fail(engine.status());
  auto logits = a.reference
                    ? reference_forward((*engine)->model(), (*engine)->layer_policies(), *ids)
                    : (*engine)->score(*ids);
  if (!logits) return fail(logits.status());
  FILE* out = std::fopen(a.out.c_str(), "wb");
  if (!out) return fail("cannot write " + a.out);
  const size_t written = std::fwrite(logits->data(), sizeof(float), logits->size(), out);
  const bool closed = std::fclose(out) == 0;
  if (written != logits->size() || !closed) return fail("short write to " + a.out);
  nlohmann::json j;
  j["n_tokens"] = ids->size();
  j["n_vocab"] = (*engine)->config().n_vocab;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

void add_score_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ScoreArgs>();
  CLI::App* cmd = app.add_subcommand("score", "Write the logits of every position of a token sequence");
  cmd->add_option("--model,-m", args->model.model, "GGUF file or HF folder")->required();
  add_rope_options(cmd, args->model.rope);
  cmd->add_option("--ids", args->ids, "token ids, \"1 2 3\"");
  cmd->add_option("--ids-file", args->ids_file, "file of token ids");
  cmd->add_option("--out,-o", args->out, "output file (f32 [n_tokens, n_vocab])")->required();
  cmd->add_option("--attention,-a", args->model.attention, "attention policy")->capture_default_str();
  cmd->add_option("--threads", args->model.threads, "0 = all cores")->capture_default_str();
  cmd->add_option("--chunk", args->chunk, "prefill chunk size")->capture_default_str();
  cmd->add_option("--layer-attention", args->model.layer_policies,
                  "per-layer policy A-B=POLICY, repeatable; wins over --attention and native windows");
  cmd->add_option("--kv-type", args->model.kv_type, "KV storage: f16, f32 (exact) or int8 (half the bytes)")->capture_default_str();
  cmd->add_option("--kv-budget", args->model.kv_budget, "KV pool size, e.g. 512M");
  cmd->add_flag("--reference", args->reference,
                "use the slow scalar reference forward pass (f32 activations, naive attention)");
  cmd->callback([args, &exit_code] { exit_code = score(*args); });
}

}  // namespace stride::cli
