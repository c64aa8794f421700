#pragma once
// One prefill of a prompt handed to other engines of the same model. An eval
// sweep runs each prompt through dense and through top-k policies whose
// prompt chunks read every page (prefill=dense): each of them would compute
// the very KV and logits dense computed. The first engine exports its
// sequence right after the prefill (Engine::generate_sharing); each other
// one imports it (Engine::generate_prefilled) and decodes under its own
// policy. Engine::takes_prefill admits only a prefill that is byte for byte
// the taker's own: same model, RoPE, chunking, page size, KV storage,
// threads and kernels, and on every layer the same attention on prompt
// chunks; the producer keeps key summaries on every layer
// (EngineOptions::kv_page_summaries), made from the f32 keys as the taker's
// own prefill would make them.
#include <cstdint>
#include <string>
#include <vector>

#include "kv/kv_snapshot.h"

namespace stride {

struct PrefilledPrompt {
  std::vector<int32_t> prompt;  // empty: nothing to share
  std::string identity;         // the producer's Engine::prefill_identity()
  KvSequenceImage kv;           // the sequence right after the prefill
  std::vector<float> logits;    // [n_vocab]: the prompt's last position
  // What the prefill's attention read (KvStats::pages_read / pages_present),
  // so a taker's counts are those of its own prefill.
  int64_t pages_read = 0;
  int64_t pages_present = 0;
  double prefill_seconds = 0;

  bool empty() const { return prompt.empty(); }
};

}  // namespace stride
