// Hugging Face config.json: arbitrary bytes parsed as JSON (as hf_folder does,
// without exceptions) and turned into a ModelConfig. A config that is accepted
// must be one the engine can size buffers from.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "loader/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stride;
  if (size == 0) return 0;
  // The first byte picks whether lm_head.weight exists; the rest is the file.
  const bool has_lm_head = data[0] & 1;
  const nlohmann::json j = nlohmann::json::parse(data + 1, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  Expected<ModelConfig> c = InvalidArgument("unset");
  try {
    c = config_from_hf_json(j, has_lm_head);
  } catch (const std::exception&) {
    return 0;  // load_hf_folder turns these into a Status as well
  }
  if (!c.ok()) return 0;
  const bool sane = c->n_layer > 0 && c->n_embd > 0 && c->n_head > 0 && c->n_head_kv > 0 &&
                    c->head_dim > 0 && c->n_vocab > 0 && c->n_head % c->n_head_kv == 0 &&
                    (int)c->layer_windowed.size() == c->n_layer;
  if (!sane) {
    std::fprintf(stderr, "fuzz_hf_config: accepted a config with impossible sizes\n");
    std::abort();
  }
  return 0;
}
