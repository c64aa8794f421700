#pragma once
// Small helpers shared by the CLI commands.
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

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
};
Expected<EngineOptions> to_engine_options(const ModelRunOptions& o, int64_t tokens_needed);

}  // namespace stride::cli
