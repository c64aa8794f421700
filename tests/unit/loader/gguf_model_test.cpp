// config_from_gguf and open_gguf_model on tiny synthetic models.
#include <gtest/gtest.h>

#include <cmath>

#include "gguf_open_util.h"

namespace stride {
namespace {

using namespace stride::test;

TEST(GGUFModel, TinyLlamaDefaults) {
  auto m = open_spec(tiny_model());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config;
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_EQ(c.n_vocab, 16);  // from tokenizer.ggml.tokens
  EXPECT_EQ(c.head_dim, 8);  // 32 / 4
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_FLOAT_EQ(c.rope_base, 10000.f);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::None);
  EXPECT_FALSE(c.rope_neox);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ((*m)->tensors().size(), 11u);
  EXPECT_EQ((*m)->weight_bytes(), 4 * (32 * 16 + 32 + 32 + 32 * 32 * 2 + 32 * 16 * 2 + 32 + 64 * 32 * 3));
}

TEST(GGUFModel, VocabFallsBackToEmbedding) {
  GGUFSpec s = tiny_model();
  s.kvs.pop_back();  // drop tokenizer.ggml.tokens
  auto m = open_spec(s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config.n_vocab, 16);
}

TEST(GGUFModel, RopeScalingAndOutput) {
  GGUFSpec s = tiny_model();
  s.kvs.push_back(kv_str("llama.rope.scaling.type", "linear"));
  s.kvs.push_back(kv_f32("llama.rope.scaling.factor", 4.f));
  s.kvs.push_back(kv_f32("llama.rope.freq_base", 500000.f));
  s.tensors.push_back(tensor("output.weight", {32, 16}));
  auto m = open_spec(s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config.rope_scaling.type, RopeScalingType::Linear);
  EXPECT_DOUBLE_EQ((*m)->config.rope_scaling.factor, 4.0);
  EXPECT_FLOAT_EQ((*m)->config.rope_base, 500000.f);
  EXPECT_FALSE((*m)->config.tied_embeddings);
  s.kvs.push_back(kv_str("llama.rope.scaling.type", "dynamic"));
  s.kvs.erase(s.kvs.end() - 4);  // keep one scaling.type key
  expect_error(s, StatusCode::kUnsupported, "dynamic");
}

TEST(GGUFModel, YarnMetadata) {
  GGUFSpec s = tiny_model();
  s.kvs.push_back(kv_str("llama.rope.scaling.type", "yarn"));
  s.kvs.push_back(kv_f32("llama.rope.scaling.factor", 4.f));
  s.kvs.push_back(kv_u32("llama.rope.scaling.original_context_length", 64));
  s.kvs.push_back(kv_f32("llama.rope.scaling.yarn_beta_fast", 16.f));
  s.kvs.push_back(kv_f32("llama.rope.scaling.yarn_attn_factor", 1.25f));
  auto m = open_spec(s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const RopeScaling& r = (*m)->config.rope_scaling;
  EXPECT_EQ(r.type, RopeScalingType::Yarn);
  EXPECT_DOUBLE_EQ(r.factor, 4.0);
  EXPECT_EQ(r.original_context, 64);
  EXPECT_DOUBLE_EQ(r.beta_fast, 16.0);
  EXPECT_DOUBLE_EQ(r.beta_slow, 1.0);
  EXPECT_DOUBLE_EQ(r.attn_factor, 1.25);
  EXPECT_EQ(rope_usable_context(r, (*m)->config.n_ctx_train), 256);  // 4 x 64 > 128
  s.kvs.push_back(kv_f32("llama.rope.scaling.yarn_beta_slow", -1.f));
  expect_error(s, StatusCode::kCorrupt, "yarn_");
}

TEST(GGUFModel, RopeFactorTensorsAreChecked) {
  GGUFSpec s = tiny_model();
  // Filler bytes, and 3 entries where the 8-dim rotation needs 4: refused
  // either for a non-positive entry or for the count.
  s.tensors.push_back(tensor("rope_freqs.weight", {3}));
  expect_error(s, StatusCode::kCorrupt, "rope");
  s = tiny_model();
  s.tensors.push_back(tensor("rope_factors_long.weight", {4}, 1));  // f16: not what converters write
  expect_error(s, StatusCode::kCorrupt, "rope_factors_long");
  s = tiny_model();
  s.kvs.push_back(kv_str("llama.rope.scaling.type", "longrope"));
  expect_error(s, StatusCode::kCorrupt, "rope_factors_long");
}

TEST(GGUFModel, MistralWindowEveryLayer) {
  GGUFSpec s = tiny_model("mistral");
  s.kvs.push_back(kv_u32("mistral.attention.sliding_window", 4096));
  auto m = open_spec(s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config.arch, Arch::Mistral);
  EXPECT_EQ((*m)->config.sliding_window, 4096);
  EXPECT_TRUE((*m)->config.is_windowed(0));
}

TEST(GGUFModel, Qwen2NeedsBiases) {
  auto m = open_spec(tiny_model("qwen2"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE((*m)->config.attn_qkv_bias);
  EXPECT_TRUE((*m)->config.rope_neox);
  EXPECT_FALSE((*m)->config.is_windowed(0));
  expect_error(tiny_model("qwen2", "blk.0.attn_k.bias"), StatusCode::kNotFound,
               "required tensor 'blk.0.attn_k.bias' is missing");
}

TEST(GGUFModel, Gemma3Patterns) {
  GGUFSpec s = tiny_model("gemma3");
  s.kvs.push_back(kv_u32("gemma3.attention.sliding_window", 512));
  auto m = open_spec(s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config;
  EXPECT_TRUE(c.qk_norm && c.sandwich_norms && c.rope_neox);
  EXPECT_EQ(c.act, Activation::GeluTanh);
  EXPECT_FLOAT_EQ(c.attn_scale, 1.f / std::sqrt(8.f));
  EXPECT_FLOAT_EQ(c.rope_base, 1e6f);
  EXPECT_FLOAT_EQ(c.rope_base_local, 1e4f);
  EXPECT_TRUE(c.is_windowed(0));  // (0 + 1) % 6 != 0

  GGUFSpec p = s;
  p.kvs.push_back(kv_bool_arr("gemma3.attention.sliding_window_pattern", {false}));
  p.kvs.push_back(kv_f32("gemma3.attention.query_pre_attn_scalar", 64.f));
  m = open_spec(p);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_FALSE((*m)->config.is_windowed(0));
  EXPECT_FLOAT_EQ((*m)->config.attn_scale, 0.125f);

  p = s;
  p.kvs.push_back(kv_u32("gemma3.attention.sliding_window_pattern", 1));  // every layer global
  m = open_spec(p);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE((*m)->config.is_windowed(0));

  p = s;
  p.kvs.push_back(kv_bool_arr("gemma3.attention.sliding_window_pattern", {true, false}));
  expect_error(p, StatusCode::kCorrupt, "sliding_window_pattern' has 2 entries");

  expect_error(tiny_model("gemma3", "blk.0.post_ffw_norm.weight"), StatusCode::kNotFound,
               "'blk.0.post_ffw_norm.weight'");
}

// qwen3moe with 4 experts of ff 16, top-2, stacked expert tensors in place of the dense FFN.
GGUFSpec tiny_moe() {
  GGUFSpec s = tiny_model("qwen3moe");
  s.kvs.push_back(kv_u32("qwen3moe.expert_count", 4));
  s.kvs.push_back(kv_u32("qwen3moe.expert_used_count", 2));
  s.kvs.push_back(kv_u32("qwen3moe.expert_feed_forward_length", 16));
  std::vector<TensorSpec> t;
  for (const TensorSpec& e : s.tensors)
    if (e.name.find("ffn_gate") == std::string::npos && e.name.find("ffn_up") == std::string::npos &&
        e.name.find("ffn_down") == std::string::npos)
      t.push_back(e);
  t.push_back(tensor("blk.0.attn_q_norm.weight", {8}));
  t.push_back(tensor("blk.0.attn_k_norm.weight", {8}));
  t.push_back(tensor("blk.0.ffn_gate_inp.weight", {32, 4}));
  t.push_back(tensor("blk.0.ffn_gate_exps.weight", {32, 16, 4}));
  t.push_back(tensor("blk.0.ffn_up_exps.weight", {32, 16, 4}));
  t.push_back(tensor("blk.0.ffn_down_exps.weight", {16, 32, 4}));
  s.tensors = t;
  return s;
}

TEST(GGUFModel, ExpertsReplaceTheDenseFfn) {
  auto m = open_spec(tiny_moe());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config;
  EXPECT_EQ(c.arch, Arch::Qwen3Moe);
  EXPECT_EQ(c.moe.n_expert, 4);
  EXPECT_EQ(c.moe.n_expert_used, 2);
  EXPECT_EQ(c.moe.n_ff_expert, 16);
  EXPECT_TRUE(c.moe.norm_topk_prob);  // llama.cpp renormalises qwen3moe's weights
  GGUFSpec s = tiny_moe();
  s.kvs.push_back(kv_bool("qwen3moe.expert_weights_norm", false));
  m = open_spec(s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_FALSE((*m)->config.moe.norm_topk_prob);

  s = tiny_moe();
  s.tensors.back() = tensor("blk.0.ffn_down_exps.weight", {16, 32, 3});
  expect_error(s, StatusCode::kCorrupt, "'blk.0.ffn_down_exps.weight' has shape [16, 32, 3], expected [16, 32, 4]");
  s = tiny_moe();
  s.kvs.erase(s.kvs.end() - 2);  // expert_used_count 2 -> 5
  s.kvs.push_back(kv_u32("qwen3moe.expert_used_count", 5));
  expect_error(s, StatusCode::kCorrupt, "experts used per token (5)");
}

TEST(GGUFModel, ConfigErrors) {
  expect_error(tiny_model("gpt2"), StatusCode::kUnsupported, "architecture 'gpt2'");
  GGUFSpec s = tiny_model();
  s.kvs.erase(s.kvs.begin() + 1);
  expect_error(s, StatusCode::kNotFound, "llama.block_count");
  s = tiny_model();
  s.kvs[5] = kv_u32("llama.attention.head_count_kv", 3);
  expect_error(s, StatusCode::kCorrupt, "n_head 4 is not a multiple of n_head_kv 3");
  s = tiny_model();
  s.kvs[4] = kv_u32("llama.attention.head_count", 0);
  expect_error(s, StatusCode::kCorrupt, "head_count = 0");
  s = tiny_model();
  s.kvs[1] = kv_str("llama.block_count", "thirty");
  expect_error(s, StatusCode::kCorrupt, "llama.block_count");
  s = tiny_model();
  s.kvs[0] = kv_u32("general.architecture", 1);
  expect_error(s, StatusCode::kCorrupt, "general.architecture");
}

TEST(GGUFModel, TensorChecks) {
  expect_error(tiny_model("llama", "blk.0.ffn_up.weight"), StatusCode::kNotFound,
               "required tensor 'blk.0.ffn_up.weight' is missing");
  expect_error(tiny_model("llama", "token_embd.weight"), StatusCode::kNotFound,
               "'token_embd.weight'");
  GGUFSpec s = tiny_model();
  s.tensors[4] = tensor("blk.0.attn_k.weight", {32, 32});
  expect_error(s, StatusCode::kCorrupt,
               "tensor 'blk.0.attn_k.weight' has shape [32, 32], expected [32, 16]");
  s = tiny_model();
  s.tensors[8] = tensor("blk.0.ffn_gate.weight", {32, 64}, 9);  // Q8_1: known, not supported
  expect_error(s, StatusCode::kUnsupported, "tensor 'blk.0.ffn_gate.weight' has dtype Q8_1");
}

}  // namespace
}  // namespace stride
