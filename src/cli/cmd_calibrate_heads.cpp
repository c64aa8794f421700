// `stride calibrate-heads`: the calibration pass of per-head top-k budgets.
// Seeded retrieval prompts from the eval suite (a seed of its own, so the
// prompts are not the ones `stride eval` scores) are prefilled densely and
// decoded for a few steps; per (layer, kv head) the attention mass outside the
// sinks and the local window is saved as a head profile (engine/head_profile.h)
// for `topk:...,heads=FILE`.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/eval_prompt_format.h"
#include "cli/rope_options.h"
#include "engine/head_profile.h"
#include "eval/head_calibration.h"
#include "eval/ruler_suite.h"

namespace stride::cli {

namespace {

struct CalibrateArgs {
  ModelRunOptions model;
  std::string out;  // empty: next to the model
  std::string lengths = "8192";
  std::string tasks = "niah_single,niah_multikey,niah_multiquery,niah_multivalue";
  int prompts = 1;  // per task and length
  int decode_steps = 8;
  uint64_t seed = 7919;
  int64_t sinks = 0, window = 0;  // tokens; 0: top-k's defaults
  std::string text_file;
  std::string chat = "auto";
  int chunk = 256;
};

Expected<RulerSuiteOptions> calibration_suite(const CalibrateArgs& a) {
  RulerSuiteOptions o;
  o.tasks.clear();
  std::stringstream ss(a.tasks);
  for (std::string name; std::getline(ss, name, ',');) {
    STRIDE_ASSIGN_OR_RETURN(RulerTask t, parse_ruler_task(name));
    o.tasks.push_back(t);
  }
  STRIDE_ASSIGN_OR_RETURN(std::vector<double> lengths, parse_number_list(a.lengths, "length"));
  o.lengths.clear();
  for (const double l : lengths) {
    if (l < 1 || l != (double)(int64_t)l) return InvalidArgument("lengths must be positive token counts");
    o.lengths.push_back((int64_t)l);
  }
  if (a.prompts < 1) return InvalidArgument("--prompts must be at least 1");
  o.depths = o.trials = a.prompts;
  o.seed = a.seed;
  return o;
}

// The policy calibration runs: decode steps select over every page (dense
// reads) so the observer sees each query, with the sinks and window measured against.
std::string calibration_policy(const CalibrateArgs& a) {
  std::string p = "topk:sparsity=0,prefill=dense";
  if (a.sinks > 0) p += ",sinks=" + std::to_string(a.sinks);
  if (a.window > 0) p += ",window=" + std::to_string(a.window);
  return p;
}

void print_profile(const HeadProfile& p) {
  std::printf("distant attention mass (outside %lld sink + %lld window tokens), per layer and kv head:\n",
              (long long)p.setup.sinks, (long long)p.setup.window);
  for (int l = 0; l < p.n_layer; ++l) {
    std::printf("  layer %2d:", l);
    for (int h = 0; h < p.n_kv_heads; ++h) std::printf(" %.3f", p.distant_mass[(size_t)l * p.n_kv_heads + h]);
    std::printf("\n");
  }
}

int calibrate(const CalibrateArgs& a) {
  auto suite = calibration_suite(a);
  if (!suite) return fail(suite.status());
  auto text = read_text(a.text_file.empty() ? default_text_path() : a.text_file);
  if (!text) return fail(text.status());
  const int64_t longest = *std::max_element(suite->lengths.begin(), suite->lengths.end());
  const int64_t context = longest + longest / 16 + a.decode_steps + 64;
  auto engine = make_engine(a.model, calibration_policy(a), context, a.chunk, /*prefix_cache=*/false);
  if (!engine) return fail(engine.status());
  if (!(*engine)->tokenizer()) return fail("calibrate-heads needs a model with a tokenizer (a GGUF file)");
  std::string chat_label;
  auto format = prompt_format(**engine, a.chat, chat_label);
  if (!format) return fail(format.status());
  auto haystack = Haystack::from_text(std::move(*text), *(*engine)->tokenizer());
  if (!haystack) return fail(haystack.status());
  auto instances = build_suite(*suite, TaskContext{*haystack, *(*engine)->tokenizer(), *format});
  if (!instances) return fail(instances.status());
  std::fprintf(stderr, "calibrate-heads: %zu prompts, %d decode steps each\n", instances->size(), a.decode_steps);
  auto mass = measure_distant_mass(**engine, *instances, a.decode_steps, [](size_t done, size_t total) {
    std::fprintf(stderr, "calibrate-heads: %zu/%zu prompts\n", done, total);
  });
  if (!mass) return fail(mass.status());

  HeadProfile profile;
  profile.model = model_identity((*engine)->model().source());
  profile.n_layer = mass->n_layer;
  profile.n_kv_heads = mass->n_kv_heads;
  profile.distant_mass = mass->mass;
  CalibrationSetup& s = profile.setup;
  s.lengths = suite->lengths;
  for (const RulerTask t : suite->tasks) s.tasks.push_back(ruler_task_name(t));
  s.prompts = (int)instances->size();
  s.decode_steps = a.decode_steps;
  s.seed = a.seed;
  s.page_size = a.model.page_size;
  s.sinks = mass->sink_tokens;
  s.window = mass->window_tokens;
  const std::string out = a.out.empty() ? a.model.model + ".heads.json" : a.out;
  if (Status st = write_head_profile(profile, out); !st.ok()) return fail(st);
  print_profile(profile);
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace

void add_calibrate_heads_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate-heads",
      "measure per (layer, kv head) how much decode attention falls outside sinks + window, for "
      "topk:...,heads=FILE");
  cmd->add_option("--model,-m", args->model.model, "GGUF file")->required();
  add_rope_options(cmd, args->model.rope);
  cmd->add_option("--out", args->out, "profile to write (default MODEL.heads.json, next to the model)");
  cmd->add_option("--lengths", args->lengths, "comma-separated prompt token counts")->capture_default_str();
  cmd->add_option("--tasks", args->tasks, "eval tasks the prompts come from")->capture_default_str();
  cmd->add_option("--prompts", args->prompts, "prompts per task and length")->capture_default_str();
  cmd->add_option("--decode-steps", args->decode_steps, "greedy decode steps observed per prompt")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "prompt seed (keep it apart from the seeds `stride eval` scores)")
      ->capture_default_str();
  cmd->add_option("--sinks", args->sinks, "sink tokens (0: top-k's default, one page)")->capture_default_str();
  cmd->add_option("--window", args->window, "local window tokens (0: top-k's default, one page)")
      ->capture_default_str();
  cmd->add_option("--text", args->text_file, "haystack document (default ~/.cache/stride/debian-reference.txt)");
  cmd->add_option("--chat", args->chat, "auto: the GGUF's chat template if it has one; on; off")
      ->capture_default_str();
  cmd->add_option("--chunk", args->chunk, "prefill chunk size")->capture_default_str();
  cmd->add_option("--threads", args->model.threads, "0 = all cores")->capture_default_str();
  cmd->add_option("--page-size", args->model.page_size, "KV page size (tokens)")->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = calibrate(*args); });
}

}  // namespace stride::cli
