// --head-type: which type the output head runs in, the refusal of heads whose
// rows are not whole super-blocks, and a requantized head's logits against
// the f32 head's on a small random llama (tests/data/generated/head_type,
// from scripts/oracles/head_type_model.py; rows of 256).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/head_type.h"

namespace stride {
namespace {

const std::string kGen = std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/";

TEST(HeadType, ParsesTheFiveNames) {
  EXPECT_EQ(parse_head_type("file"), HeadType::File);
  EXPECT_EQ(parse_head_type("q4_k"), HeadType::Q4_K);
  EXPECT_EQ(parse_head_type("q5_k"), HeadType::Q5_K);
  EXPECT_EQ(parse_head_type("q4_0"), HeadType::Q4_0);
  EXPECT_EQ(parse_head_type("q5_0"), HeadType::Q5_0);
  EXPECT_FALSE(parse_head_type("q8_0").has_value());
  EXPECT_FALSE(parse_head_type("Q4_K").has_value());
  EXPECT_FALSE(parse_head_type("q6_k").has_value());
  EXPECT_FALSE(parse_head_type("").has_value());
  for (HeadType t : {HeadType::File, HeadType::Q4_K, HeadType::Q5_K, HeadType::Q4_0, HeadType::Q5_0})
    EXPECT_EQ(parse_head_type(head_type_name(t)), t);
}

TEST(HeadType, SmallerOnlyAndWholeSuperBlocks) {
  auto in_effect = [](DType file, HeadType asked) { return *head_type_in_effect(file, 2048, asked); };
  EXPECT_EQ(in_effect(DType::Q6_K, HeadType::File), DType::Q6_K);
  EXPECT_EQ(in_effect(DType::Q6_K, HeadType::Q4_K), DType::Q4_K);
  EXPECT_EQ(in_effect(DType::Q6_K, HeadType::Q5_K), DType::Q5_K);
  EXPECT_EQ(in_effect(DType::Q8_0, HeadType::Q4_K), DType::Q4_K);
  EXPECT_EQ(in_effect(DType::F16, HeadType::Q5_K), DType::Q5_K);
  EXPECT_EQ(in_effect(DType::F32, HeadType::Q4_K), DType::Q4_K);
  // At or below the asked bits per weight: left as stored.
  EXPECT_EQ(in_effect(DType::Q4_K, HeadType::Q4_K), DType::Q4_K);
  EXPECT_EQ(in_effect(DType::Q4_K, HeadType::Q5_K), DType::Q4_K);
  EXPECT_EQ(in_effect(DType::Q4_0, HeadType::Q4_K), DType::Q4_0);  // 4.5 bits as Q4_K
  EXPECT_EQ(in_effect(DType::Q4_1, HeadType::Q5_K), DType::Q4_1);  // 5.0 < 5.5
  EXPECT_EQ(in_effect(DType::Q4_1, HeadType::Q4_K), DType::Q4_K);  // 5.0 > 4.5
  EXPECT_EQ(in_effect(DType::Q3_K, HeadType::Q4_K), DType::Q3_K);
  // Qwen2.5-0.5B's 896: not whole 256-element super-blocks, whatever the file type.
  for (DType file : {DType::Q8_0, DType::Q4_0}) {
    auto refused = head_type_in_effect(file, 896, HeadType::Q4_K);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("multiple of 256"), std::string::npos) << refused.status().message();
    EXPECT_NE(refused.status().message().find("896"), std::string::npos);
  }
  EXPECT_EQ(*head_type_in_effect(DType::Q8_0, 896, HeadType::File), DType::Q8_0);
}

TEST(HeadType, LegacyTypesSmallerOnlyAndWholeBlocksOf32) {
  auto in_effect = [](DType file, int64_t cols, HeadType asked) { return *head_type_in_effect(file, cols, asked); };
  // Qwen2.5-0.5B's 896 is 28 blocks of 32.
  EXPECT_EQ(in_effect(DType::Q8_0, 896, HeadType::Q5_0), DType::Q5_0);
  EXPECT_EQ(in_effect(DType::Q8_0, 896, HeadType::Q4_0), DType::Q4_0);
  EXPECT_EQ(in_effect(DType::F16, 896, HeadType::Q4_0), DType::Q4_0);
  EXPECT_EQ(in_effect(DType::Q6_K, 2048, HeadType::Q5_0), DType::Q5_0);  // 6.5625 > 5.5
  EXPECT_EQ(in_effect(DType::Q5_0, 896, HeadType::Q4_0), DType::Q4_0);
  // At or below the asked bits per weight: left as stored.
  EXPECT_EQ(in_effect(DType::Q4_K, 2048, HeadType::Q4_0), DType::Q4_K);  // 4.5 as Q4_0
  EXPECT_EQ(in_effect(DType::Q5_K, 2048, HeadType::Q5_0), DType::Q5_K);  // 5.5 as Q5_0
  EXPECT_EQ(in_effect(DType::Q4_0, 896, HeadType::Q5_0), DType::Q4_0);
  EXPECT_EQ(in_effect(DType::Q5_0, 896, HeadType::Q5_0), DType::Q5_0);
  EXPECT_EQ(in_effect(DType::Q4_1, 896, HeadType::Q5_0), DType::Q4_1);  // 5.0 < 5.5
  for (HeadType asked : {HeadType::Q4_0, HeadType::Q5_0}) {
    auto refused = head_type_in_effect(DType::Q8_0, 900, asked);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("multiple of 32"), std::string::npos) << refused.status().message();
    EXPECT_NE(refused.status().message().find("900"), std::string::npos);
  }
}

std::vector<int32_t> fixture_ids() {
  std::ifstream f(kGen + "head_type/ids.json");
  EXPECT_TRUE(f.good()) << "tests/data/generated/head_type missing: run scripts/setup";
  if (!f.good()) return {};
  return nlohmann::json::parse(f).get<std::vector<int32_t>>();
}

Expected<std::unique_ptr<Engine>> engine_for(const std::string& path, HeadType head, bool repack = true) {
  EngineOptions o;
  o.model_path = path;
  o.attention = *parse_policy("dense");
  o.threads = 2;
  o.max_context = 128;
  o.kv_storage = KvStorage::F32;
  o.show_progress = false;
  o.head_type = head;
  o.repack_weights = repack;
  return Engine::create(o);
}

// Largest |a - b| over all logits.
float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// A coarser and a finer requantized head, each packed and in the GGUF layout:
// near the f32 head's logits (spread ~2.4) but not equal to them, the two
// layouts agreeing, and the finer type nearer than the coarser. Bounds: the
// largest of 48 x 256 logits moved by head rows with ~4% (4-bit) and ~2%
// (5-bit) RMS error.
void expect_requantized_heads_near_f32(HeadType coarse, DType coarse_type, HeadType fine, DType fine_type) {
  const std::vector<int32_t> ids = fixture_ids();
  ASSERT_FALSE(ids.empty());
  const std::string path = kGen + "head_type/model-f32.gguf";
  auto file = engine_for(path, HeadType::File);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ((*file)->model().head_type(), DType::F32);
  auto reference = (*file)->score(ids);
  ASSERT_TRUE(reference.ok());
  float coarse_diff = 0;
  for (const auto& [asked, type, bound] :
       {std::tuple{coarse, coarse_type, 1.0f}, std::tuple{fine, fine_type, 0.6f}}) {
    std::vector<float> packed_logits;
    for (bool repack : {true, false}) {
      auto e = engine_for(path, asked, repack);
      ASSERT_TRUE(e.ok()) << e.status().to_string();
      EXPECT_EQ((*e)->model().head_type(), type);
      auto logits = (*e)->score(ids);
      ASSERT_TRUE(logits.ok());
      const float d = max_diff(*logits, *reference);
      EXPECT_GT(d, 0.0f) << dtype_name(type);
      EXPECT_LT(d, bound) << dtype_name(type) << " repack " << repack;
      if (repack) packed_logits = *logits;
      else EXPECT_LT(max_diff(*logits, packed_logits), 0.05f) << "the packed and GGUF-layout heads disagree";
      if (type == coarse_type) coarse_diff = d;
      else EXPECT_LT(d, coarse_diff) << dtype_name(fine_type) << " strays further than " << dtype_name(coarse_type);
    }
  }
}

TEST(HeadType, RequantizedHeadRunsAndIsReported) {
  expect_requantized_heads_near_f32(HeadType::Q4_K, DType::Q4_K, HeadType::Q5_K, DType::Q5_K);
}

// The 32-element types run packed and in the GGUF layout alike, near the f32 head.
TEST(HeadType, LegacyRequantizedHeadRunsPackedAndUnpacked) {
  expect_requantized_heads_near_f32(HeadType::Q4_0, DType::Q4_0, HeadType::Q5_0, DType::Q5_0);
}

TEST(HeadType, RefusesRowsThatAreNotWholeSuperBlocks) {
  auto e = engine_for(kGen + "tiny/llama/model-f32.gguf", HeadType::Q4_K);  // n_embd 64
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("multiple of 256"), std::string::npos) << e.status().message();
  auto plain = engine_for(kGen + "tiny/llama/model-f32.gguf", HeadType::File);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ((*plain)->model().head_type(), DType::F32);
}

}  // namespace
}  // namespace stride
