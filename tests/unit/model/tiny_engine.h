#pragma once
// An engine on one of the generated tiny f32 models (tests/data/generated/tiny),
// with 4-token pages and f32 KV, for the model tests.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/engine.h"

namespace stride::testing_util {

inline std::unique_ptr<Engine> tiny_engine(const std::string& name, const char* policy) {
  EngineOptions o;
  o.model_path = std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/tiny/" + name + "/model-f32.gguf";
  o.attention = *parse_policy(policy);
  o.threads = 2;
  o.max_context = 512;
  o.page_size = 4;
  o.kv_storage = KvStorage::F32;
  o.show_progress = false;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

}  // namespace stride::testing_util
