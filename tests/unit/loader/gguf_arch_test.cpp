// GGUF conventions of gemma2 and phi3 files (llama.cpp's converter and
// llama-model.cpp): defaults, window layout, softmax scale, fused tensors.
#include <gtest/gtest.h>

#include <cmath>

#include "gguf_open_util.h"

namespace stride {
namespace {

using namespace stride::test;

// tiny_model's shapes (n_embd 32, 4 heads of 8, 2 kv heads, n_ff 64) over
// n_layer layers, with Gemma-2's sandwich norms.
GGUFSpec gemma2_model(int n_layer) {
  GGUFSpec s = tiny_model("gemma2");
  s.kvs[1] = kv_u32("gemma2.block_count", (uint32_t)n_layer);
  const std::vector<TensorSpec> layer0(s.tensors.begin() + 2, s.tensors.end());
  s.tensors.resize(2);
  for (int il = 0; il < n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    for (TensorSpec t : layer0) {
      t.name = p + t.name.substr(6);  // past "blk.0."
      s.tensors.push_back(t);
    }
    s.tensors.push_back(tensor(p + "post_attention_norm.weight", {32}));
    s.tensors.push_back(tensor(p + "post_ffw_norm.weight", {32}));
  }
  return s;
}

TEST(GGUFArch, Gemma2Defaults) {
  auto m = open_spec(gemma2_model(2));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config;
  EXPECT_EQ(c.arch, Arch::Gemma2);
  EXPECT_TRUE(c.sandwich_norms && c.rope_neox);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.act, Activation::GeluTanh);
  EXPECT_FLOAT_EQ(c.embed_scale, std::sqrt(32.f));
  EXPECT_FLOAT_EQ(c.attn_scale, 1.f / std::sqrt(8.f));  // head_dim
  EXPECT_FLOAT_EQ(c.rope_base_local, c.rope_base);
  EXPECT_EQ(c.sliding_window, 4096);  // llama.cpp's default when the file has none
  EXPECT_TRUE(c.is_windowed(0));      // even layers windowed
  EXPECT_FALSE(c.is_windowed(1));
  expect_error(tiny_model("gemma2"), StatusCode::kNotFound, "'blk.0.post_attention_norm.weight'");
}

TEST(GGUFArch, Gemma2ScaleAndWindow) {
  GGUFSpec s = gemma2_model(2);
  s.kvs.push_back(kv_u32("gemma2.attention.sliding_window", 16));
  s.kvs.push_back(kv_f32("gemma2.attn_logit_softcapping", 50.f));
  s.kvs.push_back(kv_f32("gemma2.final_logit_softcapping", 30.f));
  s.kvs.push_back(kv_f32("gemma2.attention.query_pre_attn_scalar", 64.f));
  auto m = open_spec(s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config.sliding_window, 16);
  EXPECT_FLOAT_EQ((*m)->config.attn_logit_softcap, 50.f);
  EXPECT_FLOAT_EQ((*m)->config.final_logit_softcap, 30.f);
  EXPECT_FLOAT_EQ((*m)->config.attn_scale, 0.125f);

  // Gemma-2 27B (46 layers): n_embd / n_head = 32 / 4, here equal to head_dim;
  // a key_length of 16 tells the two apart.
  s = gemma2_model(46);
  s.kvs.push_back(kv_u32("gemma2.attention.key_length", 16));
  s.kvs.push_back(kv_u32("gemma2.attention.value_length", 8));
  for (TensorSpec& t : s.tensors) {
    if (t.name.find("attn_q.weight") != std::string::npos) t = tensor(t.name, {32, 64});
    if (t.name.find("attn_k.weight") != std::string::npos) t = tensor(t.name, {32, 32});
  }
  m = open_spec(s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_FLOAT_EQ((*m)->config.attn_scale, 1.f / std::sqrt(8.f));
  EXPECT_TRUE((*m)->config.is_windowed(44));
  EXPECT_FALSE((*m)->config.is_windowed(45));
}

// Phi-3: fused attn_qkv [q 32 + k 16 + v 16 rows] and ffn_up [gate 64 + up 64 rows].
GGUFSpec phi3_model() {
  GGUFSpec s = tiny_model("phi3");
  std::vector<TensorSpec> t;
  for (const TensorSpec& e : s.tensors) {
    if (e.name == "blk.0.attn_q.weight") t.push_back(tensor("blk.0.attn_qkv.weight", {32, 64}));
    else if (e.name == "blk.0.ffn_up.weight") t.push_back(tensor("blk.0.ffn_up.weight", {32, 128}));
    else if (e.name != "blk.0.attn_k.weight" && e.name != "blk.0.attn_v.weight" &&
             e.name != "blk.0.ffn_gate.weight") t.push_back(e);
  }
  s.tensors = t;
  return s;
}

TEST(GGUFArch, Phi3FusedTensorsBecomeRowViews) {
  auto m = open_spec(phi3_model());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelSource& src = **m;
  EXPECT_EQ(src.config.arch, Arch::Phi3);
  EXPECT_TRUE(src.config.rope_neox);
  EXPECT_EQ(src.tensor("blk.0.attn_qkv.weight"), nullptr);
  const TensorView* q = src.tensor("blk.0.attn_q.weight");
  const TensorView* k = src.tensor("blk.0.attn_k.weight");
  const TensorView* v = src.tensor("blk.0.attn_v.weight");
  const TensorView* gate = src.tensor("blk.0.ffn_gate.weight");
  const TensorView* up = src.tensor("blk.0.ffn_up.weight");
  ASSERT_TRUE(q && k && v && gate && up);
  const int64_t row = 32 * 4;  // bytes of one f32 row of 32
  EXPECT_EQ(q->rows(), 32);
  EXPECT_EQ(k->rows(), 16);
  EXPECT_EQ(v->rows(), 16);
  EXPECT_EQ(k->data, q->data + 32 * row);
  EXPECT_EQ(v->data, k->data + 16 * row);
  EXPECT_EQ(v->nbytes, 16 * row);
  EXPECT_EQ(gate->rows(), 64);
  EXPECT_EQ(up->rows(), 64);
  EXPECT_EQ(up->data, gate->data + 64 * row);
  // Views, not copies: the file's bytes are counted once.
  EXPECT_EQ(src.weight_bytes(), 4 * (32 * 16 + 32 + 32 + 32 * 64 + 32 * 32 + 32 + 32 * 128 + 64 * 32));
  EXPECT_FALSE(src.config.is_windowed(0));

  GGUFSpec s = phi3_model();
  s.kvs.push_back(kv_u32("phi3.attention.sliding_window", 8));
  m = open_spec(s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE((*m)->config.is_windowed(0));  // every layer, as transformers
}

TEST(GGUFArch, Phi3FusedTensorErrors) {
  GGUFSpec s = phi3_model();
  s.tensors[3] = tensor("blk.0.attn_qkv.weight", {32, 48});
  expect_error(s, StatusCode::kCorrupt, "fused tensor 'blk.0.attn_qkv.weight' has shape [48, 32], expected [64, 32]");
  s = phi3_model();
  s.tensors.push_back(tensor("blk.0.attn_k.weight", {32, 16}));
  expect_error(s, StatusCode::kCorrupt, "'blk.0.attn_k.weight' is present beside the fused");
  s = phi3_model();
  s.tensors.push_back(tensor("blk.0.ffn_gate.weight", {32, 64}));  // then ffn_up must have n_ff rows
  expect_error(s, StatusCode::kCorrupt, "tensor 'blk.0.ffn_up.weight' has shape [32, 128], expected [32, 64]");
}

}  // namespace
}  // namespace stride
