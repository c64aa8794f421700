#pragma once
// Small helpers shared by the CLI commands.
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "loader/rope_override.h"

namespace stride::cli {

// "1 2 3" or "1,2,3" -> ids.
Expected<std::vector<int32_t>> parse_ids(const std::string& text);
// "4096", "512K", "1.5G" -> bytes.
Expected<int64_t> parse_bytes(const std::string& text);
// Prints "error: <message>" on stderr and returns the exit code 1.
int fail(const std::string& message);
int fail(const Status& status);

// Options common to commands that load a model and run it.
struct ModelRunOptions {
  std::string model;
  std::string attention = "dense";
  int threads = 0;
  std::string kv_budget;  // bytes, empty: automatic
  int64_t max_context = 0;
  int page_size = 32;
  std::string kv_type = "f16";  // f16 | f32 | int8
  std::vector<std::string> layer_policies;  // "A-B=POLICY"
  std::string kv_offload;       // offload tier bytes, empty: no tier
  std::string kv_offload_file;  // empty: the tier is anonymous RAM
  RopeOverride rope;            // --rope-scaling, --rope-scale, --yarn-orig-ctx ...
  std::string head_type = "file";  // file | q4_k | q5_k | q4_0 | q5_0 (--head-type)
};
Expected<EngineOptions> to_engine_options(const ModelRunOptions& o, int64_t tokens_needed);

// An engine for one evaluation run: `policy` on `base`'s model, room for one
// sequence of `tokens` tokens, prefill in chunks of `chunk`, no progress bar.
// prefix_cache=false makes every prompt compute all of its positions;
// page_summaries: key summaries on every layer (EngineOptions::kv_page_summaries).
Expected<std::unique_ptr<Engine>> make_engine(const ModelRunOptions& base, const std::string& policy,
                                              int64_t tokens, int chunk, bool prefix_cache = true,
                                              bool page_summaries = false);

// "1,2.5,3" -> numbers; `what` names the item in errors ("length").
Expected<std::vector<double>> parse_number_list(const std::string& text, const char* what);

// The long English document of validate and eval (scripts/setup makes it).
std::string default_text_path();
// The whole file; NotFound with how to make the default one.
Expected<std::string> read_text(const std::string& path);

// Writes the report as indented JSON (invalid UTF-8 replaced).
Status write_json(const nlohmann::json& report, const std::string& path);

// Draws png_path from json_path with a matplotlib script: python is
// STRIDE_PYTHON, else the project's venv (scripts/setup), else python3.
Status run_plot_script(std::string_view script, const std::string& json_path, const std::string& png_path);

}  // namespace stride::cli
