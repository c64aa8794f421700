// Head profiles: the JSON round trip, a profile refused on another model
// (by name, by shape, by tensors), and an engine whose top-k policy names a
// profile gets per-head shares on its layers.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "engine/engine.h"
#include "engine/head_profile.h"
#include "engine_test_util.h"

namespace stride {
namespace {

using testing_util::tiny;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("stride_test_" + name + "_" + std::to_string(::getpid()))).string();
}

HeadProfile made_up_profile(const ModelIdentity& model) {
  HeadProfile p;
  p.model = model;
  p.n_layer = model.n_layer;
  p.n_kv_heads = model.n_kv_heads;
  for (int i = 0; i < p.n_layer * p.n_kv_heads; ++i) p.distant_mass.push_back(0.05 + 0.1 * (i % 7));
  p.setup = {{8192}, {"niah_single", "niah_multikey"}, 4, 8, 7919, 32, 32, 32};
  return p;
}

ModelIdentity identity_of(const std::string& path) {
  auto source = open_model(path);
  EXPECT_TRUE(source.ok()) << source.status().to_string();
  return model_identity(**source);
}

TEST(HeadProfile, RoundTrips) {
  const HeadProfile p = made_up_profile(identity_of(tiny("llama")));
  const std::string path = temp_path("profile.json");
  ASSERT_TRUE(write_head_profile(p, path).ok());
  const auto back = read_head_profile(path);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->model, p.model);
  EXPECT_EQ(back->distant_mass, p.distant_mass);
  EXPECT_EQ(back->setup.lengths, p.setup.lengths);
  EXPECT_EQ(back->setup.tasks, p.setup.tasks);
  EXPECT_EQ(back->setup.seed, p.setup.seed);
  EXPECT_EQ(back->setup.window, p.setup.window);
  std::remove(path.c_str());
}

TEST(HeadProfile, IdentityTellsModelsApart) {
  const ModelIdentity llama = identity_of(tiny("llama")), qwen = identity_of(tiny("qwen2"));
  EXPECT_EQ(llama, identity_of(tiny("llama")));
  EXPECT_NE(llama.tensor_digest, qwen.tensor_digest);
  // The same weights stored as f16: same shapes, other tensor types.
  const ModelIdentity llama_f16 = identity_of(std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/tiny/llama/model-f16.gguf");
  EXPECT_NE(llama.tensor_digest, llama_f16.tensor_digest);
  const Status refused = check_profile_model(made_up_profile(llama), llama_f16);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("another model"), std::string::npos) << refused.message();
}

TEST(HeadProfile, EngineRefusesAProfileOfAnotherModel) {
  const std::string path = temp_path("other.json");
  ASSERT_TRUE(write_head_profile(made_up_profile(identity_of(tiny("qwen2"))), path).ok());
  auto e = Engine::create(
      testing_util::exact_engine_options(tiny("llama"), "topk:sparsity=0.5,prefill=dense,heads=" + path, 8, 16));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("measured on another model"), std::string::npos) << e.status().message();
  std::remove(path.c_str());
}

TEST(HeadProfile, EngineSharesPicksByTheProfile) {
  const ModelIdentity llama = identity_of(tiny("llama"));
  const std::string path = temp_path("own.json");
  const HeadProfile p = made_up_profile(llama);
  ASSERT_TRUE(write_head_profile(p, path).ok());
  auto e = Engine::create(testing_util::exact_engine_options(
      tiny("llama"), "topk:sparsity=0.5,prefill=dense,heads=" + path + ",retrieval=0.25", 8, 16));
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  const auto& layers = (*e)->layer_policies();
  ASSERT_EQ((int)layers.size(), llama.n_layer);
  int retrieval = 0;
  for (const double s : layers[0].head_shares) retrieval += s > 0.0;
  const int n = llama.n_layer * llama.n_kv_heads;
  EXPECT_EQ(retrieval, (n + 3) / 4);  // ceil(0.25 n)
  for (int l = 0; l < llama.n_layer; ++l) EXPECT_EQ(layers[(size_t)l].head_layer, l);
  // It generates.
  GenerateOptions g;
  g.max_tokens = 4;
  g.ignore_eos = true;
  const auto r = (*e)->generate(std::vector<int32_t>(40, 5), g, {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->generated_ids.size(), 4u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace stride
