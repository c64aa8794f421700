#include "cli/cli_common.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <unistd.h>

namespace stride::cli {

Expected<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace((unsigned char)text[i]) || text[i] == ',') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && std::isdigit((unsigned char)text[j])) ++j;
    if (j == i || j - i > 9) return InvalidArgument("bad token id near '" + text.substr(i, 12) + "'");
    ids.push_back((int32_t)std::stol(text.substr(i, j - i)));
    i = j;
  }
  return ids;
}

Expected<int64_t> parse_bytes(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || v <= 0) return InvalidArgument("bad size '" + text + "'");
  double mult = 1;
  std::string suffix(end);
  if (suffix == "" || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "KiB") mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB") mult = 1024.0 * 1024 * 1024;
  else return InvalidArgument("bad size suffix in '" + text + "' (use K, M or G)");
  const double bytes = v * mult;
  if (bytes > 1e15) return InvalidArgument("size '" + text + "' is absurdly large");
  return (int64_t)bytes;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

int fail(const Status& status) { return fail(status.message()); }

Expected<EngineOptions> to_engine_options(const ModelRunOptions& o, int64_t tokens_needed) {
  EngineOptions e;
  e.model_path = o.model;
  e.rope_override = o.rope;
  STRIDE_ASSIGN_OR_RETURN(e.attention, parse_policy(o.attention));
  e.threads = o.threads;
  e.page_size = o.page_size;
  e.max_context = o.max_context > 0 ? o.max_context : std::max<int64_t>(tokens_needed, 1);
  auto storage = parse_kv_storage(o.kv_type);
  if (!storage) return InvalidArgument("--kv-type must be f16, f32 or int8, not '" + o.kv_type + "'");
  e.kv_storage = *storage;
  e.layer_policies = o.layer_policies;
  auto head = parse_head_type(o.head_type);
  if (!head) return InvalidArgument("--head-type must be file, q4_k, q5_k, q4_0 or q5_0, not '" + o.head_type + "'");
  e.head_type = *head;
  if (!o.kv_budget.empty()) {
    STRIDE_ASSIGN_OR_RETURN(e.kv_budget_bytes, parse_bytes(o.kv_budget));
  }
  if (!o.kv_offload.empty()) {
    STRIDE_ASSIGN_OR_RETURN(e.kv_offload_bytes, parse_bytes(o.kv_offload));
  }
  if (!o.kv_offload_file.empty() && o.kv_offload.empty())
    return InvalidArgument("--kv-offload-file needs --kv-offload-bytes (the tier's size)");
  e.kv_offload_file = o.kv_offload_file;
  // STRIDE_NO_REPACK=1 computes from the file's own layout, for benchmarks comparing both.
  const char* no_repack = std::getenv("STRIDE_NO_REPACK");
  e.repack_weights = !(no_repack && std::string_view(no_repack) == "1");
  return e;
}

Expected<std::unique_ptr<Engine>> make_engine(const ModelRunOptions& base, const std::string& policy,
                                              int64_t tokens, int chunk, bool prefix_cache, bool page_summaries) {
  ModelRunOptions o = base;
  o.attention = policy;
  STRIDE_ASSIGN_OR_RETURN(EngineOptions opts, to_engine_options(o, tokens));
  opts.prefill_chunk = chunk;
  opts.max_context = tokens + chunk;
  opts.show_progress = false;
  opts.prefix_cache = prefix_cache;
  opts.kv_page_summaries = page_summaries;
  return Engine::create(opts);
}

Expected<std::vector<double>> parse_number_list(const std::string& text, const char* what) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0') return InvalidArgument(std::string("bad ") + what + " '" + item + "'");
    out.push_back(v);
  }
  if (out.empty()) return InvalidArgument(std::string("no ") + what + " given");
  return out;
}

std::string default_text_path() {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/stride/debian-reference.txt";
}

Expected<std::string> read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return NotFound("cannot read " + path +
                    " (make it with: python3 scripts/oracles/make_long_text.py, or pass --text FILE)");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Status write_json(const nlohmann::json& report, const std::string& path) {
  std::ofstream f(path);
  f << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!f) return IoError("cannot write " + path);
  return Status::Ok();
}

Status run_plot_script(std::string_view script, const std::string& json_path, const std::string& png_path) {
  const std::string script_path = png_path + ".plot.py";
  {
    std::ofstream f(script_path);
    f << script;
    if (!f) return IoError("cannot write " + script_path);
  }
  const char* py = std::getenv("STRIDE_PYTHON");
  const char* home = std::getenv("HOME");
  std::string python = py ? py : "python3";
  if (!py && home && access((std::string(home) + "/.cache/stride/venv/bin/python").c_str(), X_OK) == 0)
    python = std::string(home) + "/.cache/stride/venv/bin/python";
  const std::string cmd = python + " '" + script_path + "' '" + json_path + "' '" + png_path + "'";
  const int rc = std::system(cmd.c_str());
  std::remove(script_path.c_str());
  if (rc != 0) return Internal("plotting failed (is matplotlib installed? set STRIDE_PYTHON): " + cmd);
  return Status::Ok();
}

}  // namespace stride::cli
