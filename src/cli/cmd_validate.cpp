// `stride validate`: what a sparse policy costs in quality. Fidelity: the same
// long English text through dense attention and through each policy (MSE of
// the logits, KL(dense||policy), top-1 agreement, perplexity of both).
// --passkey: passkey retrieval accuracy per policy at several lengths/depths.
// --kv-type int8 measures KV compression: the policy engines store int8 KV
// while the dense reference keeps f16 (--reference-kv-type to change it), so
// `-a dense --kv-type int8` is the cost of int8 KV alone.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/head_type_option.h"
#include "cli/rope_options.h"
#include "cli/commands.h"
#include "eval/fidelity.h"
#include "eval/passkey.h"

namespace stride::cli {

namespace {

struct ValidateArgs {
  ModelRunOptions model;
  std::vector<std::string> policies;
  std::string lengths = "1024,8192";
  std::string text_file;
  std::string json_out;
  std::string plot_out;
  int chunk = 256;
  int64_t bucket = 512;
  bool passkey = false;
  std::string passkey_lengths = "2048,4096,8192";
  std::string depths = "0,0.25,0.5,0.75,1";
  int key_seed = 1;
  std::string reference_kv_type;  // dense side; empty: f16 under --kv-type int8, else --kv-type
};

// The dense reference's KV storage: int8 is the compression under test, so
// its reference keeps the default f16.
std::string reference_kv_type(const ValidateArgs& a) {
  if (!a.reference_kv_type.empty()) return a.reference_kv_type;
  return a.model.kv_type == "int8" ? "f16" : a.model.kv_type;
}

int run_fidelity(const ValidateArgs& a, nlohmann::json& report) {
  auto lens_d = parse_number_list(a.lengths, "length");
  if (!lens_d) return fail(lens_d.status());
  std::vector<int64_t> lengths;
  for (double d : *lens_d) lengths.push_back((int64_t)d);
  std::sort(lengths.begin(), lengths.end());
  const int64_t max_len = lengths.back();
  ModelRunOptions reference = a.model;
  reference.kv_type = reference_kv_type(a);
  if (!parse_kv_storage(reference.kv_type))
    return fail("--reference-kv-type must be f16, f32 or int8, not '" + reference.kv_type + "'");
  auto made = make_engine(reference, "dense", max_len, a.chunk);
  if (!made) return fail(made.status());
  std::unique_ptr<Engine> dense = std::move(*made);
  report["kv_type"] = a.model.kv_type;
  report["reference_kv_type"] = reference.kv_type;
  std::printf("kv: policy %s, dense reference %s\n", a.model.kv_type.c_str(),
              reference.kv_type.c_str());
  if (!dense->tokenizer()) return fail("validate needs a GGUF model with a tokenizer");
  auto text = read_text(a.text_file.empty() ? default_text_path() : a.text_file);
  if (!text) return fail(text.status());
  // Encode only as much text as the longest length needs (~4 chars/token).
  std::vector<int32_t> ids;
  for (size_t chars = (size_t)max_len * 6; ; chars *= 2) {
    ids = dense->tokenizer()->encode(std::string_view(*text).substr(0, chars),
                                     dense->tokenizer()->add_bos_default());
    if ((int64_t)ids.size() >= max_len || chars >= text->size()) break;
  }
  if ((int64_t)ids.size() < max_len)
    return fail("the text has only " + std::to_string(ids.size()) + " tokens");
  ids.resize(max_len);
  std::printf("%-36s %7s %12s %10s %7s %10s %10s %7s\n", "policy", "length", "mse", "kl", "top1",
              "ppl_dense", "ppl_policy", "read");
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<Engine*> raw;
  for (const std::string& pol : a.policies) {
    auto e = make_engine(a.model, pol, max_len, a.chunk);
    if (!e) return fail(e.status());
    engines.push_back(std::move(*e));
    raw.push_back(engines.back().get());
  }
  const bool tty = isatty(fileno(stderr));
  std::vector<FidelityAccumulator> accs;
  auto points = compare_engines(*dense, raw, ids, lengths, a.chunk, [&](int64_t done) {
    if (tty) std::fprintf(stderr, "\r%lld/%lld tokens", (long long)done, (long long)max_len);
  }, &accs);
  if (tty) std::fprintf(stderr, "\n");
  if (!points) return fail(points.status());
  for (size_t e = 0; e < a.policies.size(); ++e) {
    const std::string& pol = a.policies[e];
    // Perplexity against position (the StreamingLLM figure).
    report["curves"].push_back({{"policy", pol}, {"bucket", a.bucket},
                                {"ppl_dense", bucket_perplexity(accs[e].nll_dense(), a.bucket)},
                                {"ppl_policy", bucket_perplexity(accs[e].nll_policy(), a.bucket)}});
    for (const FidelityPoint& p : (*points)[e]) {
      std::printf("%-36s %7lld %12.6g %10.5f %7.4f %10.4f %10.4f %7.3f\n", pol.c_str(),
                  (long long)p.length, p.mse, p.kl, p.top1, p.ppl_dense, p.ppl_policy,
                  p.pages_read_share);
      report["fidelity"].push_back({{"policy", pol}, {"length", p.length}, {"mse", p.mse},
                                    {"kl", p.kl}, {"top1", p.top1}, {"ppl_dense", p.ppl_dense},
                                    {"ppl_policy", p.ppl_policy},
                                    {"pages_read_share", p.pages_read_share}});
    }
  }
  return 0;
}

int run_passkeys(const ValidateArgs& a, nlohmann::json& report) {
  auto lens = parse_number_list(a.passkey_lengths, "passkey length");
  if (!lens) return fail(lens.status());
  auto depths = parse_number_list(a.depths, "depth");
  if (!depths) return fail(depths.status());
  const int64_t max_len = (int64_t)*std::max_element(lens->begin(), lens->end());
  std::printf("%-36s %7s %9s  %s\n", "policy", "length", "accuracy", "hits by depth");
  for (const std::string& pol : a.policies) {
    auto made = make_engine(a.model, pol, max_len + 64, a.chunk);
    if (!made) return fail(made.status());
    Engine* engine = made->get();
    for (double len : *lens) {
      int hits = 0;
      std::string marks;
      for (size_t i = 0; i < depths->size(); ++i) {
        const int key = 10000 + (int)((a.key_seed * 7919 + i * 104729 + (int64_t)len) % 90000);
        auto t = run_passkey(*engine, (int64_t)len, (*depths)[i], key);
        if (!t) return fail(t.status());
        hits += t->found;
        marks += t->found ? '+' : '-';
        report["passkey"].push_back({{"policy", pol}, {"length", (int64_t)len}, {"tokens", t->tokens},
                                     {"depth", t->depth}, {"key", key}, {"found", t->found},
                                     {"answer", t->answer}});
      }
      std::printf("%-36s %7lld %9.2f  %s\n", pol.c_str(), (long long)len,
                  (double)hits / (double)depths->size(), marks.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}

// Draws the JSON report (fidelity: KL and perplexity against length per
// policy; passkey: accuracy against length) with matplotlib.
constexpr const char* kPlotScript = R"PY(
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
r = json.load(open(sys.argv[1]))
rows = r.get("fidelity") or []
if rows:
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for pol in dict.fromkeys(x["policy"] for x in rows):
        pts = [x for x in rows if x["policy"] == pol]
        L = [x["length"] for x in pts]
        ax[0].plot(L, [x["kl"] for x in pts], "o-", label=pol)
        ax[1].plot(L, [x["ppl_policy"] for x in pts], "o-", label=pol)
    ax[1].plot(L, [x["ppl_dense"] for x in pts], "k--", label="dense")
    ax[0].set(xscale="log", xlabel="tokens", ylabel="KL(dense || policy)")
    ax[1].set(xscale="log", xlabel="tokens", ylabel="perplexity")
    ax[0].legend(fontsize=7); ax[1].legend(fontsize=7)
else:
    rows = r.get("passkey") or []
    fig, ax = plt.subplots(figsize=(6, 4))
    for pol in dict.fromkeys(x["policy"] for x in rows):
        by = {}
        for x in rows:
            if x["policy"] == pol:
                by.setdefault(x["length"], []).append(x["found"])
        L = sorted(by)
        ax.plot(L, [sum(by[l]) / len(by[l]) for l in L], "o-", label=pol)
    ax.set(xlabel="prompt tokens", ylabel="passkey accuracy", ylim=(-0.05, 1.05))
    ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
)PY";

int validate(const ValidateArgs& a) {
  if (a.policies.empty()) return fail("give at least one --attention POLICY");
  nlohmann::json report;
  report["model"] = a.model.model;
  const int rc = a.passkey ? run_passkeys(a, report) : run_fidelity(a, report);
  if (rc != 0) return rc;
  if (!a.json_out.empty()) {
    if (Status st = write_json(report, a.json_out); !st.ok()) return fail(st);
  }
  if (!a.plot_out.empty()) {
    if (a.json_out.empty()) return fail("--plot needs --json (the plot is drawn from it)");
    if (Status st = run_plot_script(kPlotScript, a.json_out, a.plot_out); !st.ok()) return fail(st);
  }
  return 0;
}

}  // namespace

void add_validate_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Compare a sparse policy with dense attention (fidelity or passkey retrieval)");
  cmd->add_option("--model,-m", args->model.model, "GGUF file")->required();
  add_rope_options(cmd, args->model.rope);
  add_head_type_option(cmd, args->model.head_type);
  cmd->add_option("--attention,-a", args->policies, "policy to compare with dense (repeatable)")
      ->required();
  cmd->add_option("--lengths", args->lengths, "comma-separated token counts")->capture_default_str();
  cmd->add_option("--text", args->text_file,
                  "plain-text document (default ~/.cache/stride/debian-reference.txt)");
  cmd->add_option("--json", args->json_out, "write the figures as JSON");
  cmd->add_option("--plot", args->plot_out, "draw a PNG from the JSON (needs matplotlib)");
  cmd->add_option("--chunk", args->chunk, "prefill chunk size")->capture_default_str();
  cmd->add_option("--bucket", args->bucket, "positions per perplexity-curve point in the JSON")
      ->capture_default_str();
  cmd->add_option("--threads", args->model.threads, "0 = all cores")->capture_default_str();
  cmd->add_option("--kv-type", args->model.kv_type, "KV storage of the policy runs: f16, f32 or int8")
      ->capture_default_str();
  cmd->add_option("--reference-kv-type", args->reference_kv_type,
                  "KV storage of the dense reference (default: f16 under --kv-type int8, else --kv-type)");
  cmd->add_option("--page-size", args->model.page_size, "KV page size (tokens)")->capture_default_str();
  cmd->add_option("--layer-attention", args->model.layer_policies, "per-layer policy A-B=POLICY");
  cmd->add_flag("--passkey", args->passkey, "passkey retrieval instead of fidelity");
  cmd->add_option("--passkey-lengths", args->passkey_lengths, "prompt token counts")->capture_default_str();
  cmd->add_option("--depths", args->depths, "key depths in [0, 1]")->capture_default_str();
  cmd->add_option("--key-seed", args->key_seed, "varies the hidden numbers")->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = validate(*args); });
}

}  // namespace stride::cli
