// safetensors parsing, HF name mapping and config.json handling, on tiny
// synthetic folders written by the test.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/fp16.h"
#include "gguf_test_util.h"
#include "loader/hf_config.h"
#include "loader/hf_names.h"
#include "loader/model_source.h"
#include "loader/safetensors.h"

namespace stride {
namespace {

using namespace stride::test;
using nlohmann::json;

struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

// Writes a safetensors file; element i of each tensor holds value (i + 1) * 0.5
// (converted to its dtype) so the +1 Gemma conversion can be checked.
std::string build_safetensors(const std::vector<StTensor>& ts) {
  json h = json::object();
  std::string data;
  for (const auto& t : ts) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const size_t begin = data.size();
    for (int64_t i = 0; i < n; ++i) {
      const float v = (float)(i + 1) * 0.5f;
      if (t.dtype == "F32") {
        data.append((const char*)&v, 4);
      } else {
        uint16_t b = 0;
        if (t.dtype == "F16") {
          b = fp32_to_fp16(v);
        } else {
          uint32_t bits;
          std::memcpy(&bits, &v, 4);
          b = (uint16_t)(bits >> 16);  // exact for these small halves
        }
        data.append((const char*)&b, 2);
      }
    }
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  h["__metadata__"] = {{"format", "pt"}};
  std::string hs = h.dump();
  while (hs.size() % 8) hs += ' ';
  Bytes out;
  out.u64(hs.size());
  return out.b + hs + data;
}

std::string raw_safetensors(const std::string& header, const std::string& data) {
  Bytes out;
  out.u64(header.size());
  return out.b + header + data;
}

// A 1-layer model in HF naming (hidden 32, 4 heads, 2 kv heads, ff 64, vocab 16).
std::vector<StTensor> hf_tensors(bool gemma, const std::string& dt = "F32") {
  std::vector<StTensor> t = {
      {"model.embed_tokens.weight", dt, {16, 32}},
      {"model.norm.weight", dt, {32}},
      {"model.layers.0.input_layernorm.weight", dt, {32}},
      {"model.layers.0.self_attn.q_proj.weight", dt, {32, 32}},
      {"model.layers.0.self_attn.k_proj.weight", dt, {16, 32}},
      {"model.layers.0.self_attn.v_proj.weight", dt, {16, 32}},
      {"model.layers.0.self_attn.o_proj.weight", dt, {32, 32}},
      {"model.layers.0.post_attention_layernorm.weight", dt, {32}},
      {"model.layers.0.mlp.gate_proj.weight", dt, {64, 32}},
      {"model.layers.0.mlp.up_proj.weight", dt, {64, 32}},
      {"model.layers.0.mlp.down_proj.weight", dt, {32, 64}},
  };
  if (gemma) {
    t.push_back({"model.layers.0.pre_feedforward_layernorm.weight", dt, {32}});
    t.push_back({"model.layers.0.post_feedforward_layernorm.weight", dt, {32}});
    t.push_back({"model.layers.0.self_attn.q_norm.weight", dt, {8}});
    t.push_back({"model.layers.0.self_attn.k_norm.weight", dt, {8}});
  }
  return t;
}

json llama_config() {
  return {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"},
          {"hidden_size", 32}, {"num_hidden_layers", 1}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"intermediate_size", 64}, {"vocab_size", 16},
          {"rms_norm_eps", 1e-5}, {"rope_theta", 500000.0}, {"max_position_embeddings", 2048},
          {"hidden_act", "silu"}, {"tie_word_embeddings", false}, {"rope_scaling", nullptr}};
}

json gemma_config() {
  return {{"architectures", {"Gemma3ForCausalLM"}}, {"model_type", "gemma3_text"},
          {"hidden_size", 32}, {"num_hidden_layers", 1}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"head_dim", 8}, {"intermediate_size", 64},
          {"vocab_size", 16}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0},
          {"rope_local_base_freq", 10000.0}, {"sliding_window", 512},
          {"layer_types", {"sliding_attention"}}, {"query_pre_attn_scalar", 16},
          {"hidden_activation", "gelu_pytorch_tanh"}, {"final_logit_softcapping", nullptr},
          {"attn_logit_softcapping", nullptr}, {"tie_word_embeddings", true}};
}

Expected<std::unique_ptr<ModelSource>> open_folder(const TempDir& dir, const json& cfg,
                                                    const std::vector<StTensor>& ts) {
  dir.write("config.json", cfg.dump());
  dir.write("model.safetensors", build_safetensors(ts));
  return open_model(dir.path());
}

void expect_error(const Expected<std::unique_ptr<ModelSource>>& m, StatusCode code,
                  const std::string& needle) {
  ASSERT_FALSE(m.ok()) << "expected failure mentioning: " << needle;
  EXPECT_EQ(m.status().code(), code) << m.status().to_string();
  EXPECT_NE(m.status().message().find(needle), std::string::npos)
      << "message '" << m.status().message() << "' lacks '" << needle << "'";
}

TEST(HFNames, Mapping) {
  EXPECT_EQ(hf_to_gguf_name("model.layers.12.self_attn.o_proj.weight", Arch::Llama),
            "blk.12.attn_output.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.3.self_attn.q_proj.bias", Arch::Qwen2),
            "blk.3.attn_q.bias");
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.post_attention_layernorm.weight", Arch::Mistral),
            "blk.0.ffn_norm.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.post_attention_layernorm.weight", Arch::Gemma3),
            "blk.0.post_attention_norm.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.pre_feedforward_layernorm.weight", Arch::Gemma3),
            "blk.0.ffn_norm.weight");
  EXPECT_EQ(hf_to_gguf_name("lm_head.weight", Arch::Llama), "output.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.x.mlp.up_proj.weight", Arch::Llama), "");
  EXPECT_EQ(hf_to_gguf_name("model.rotary_emb.inv_freq", Arch::Llama), "");
}

TEST(HFNames, MoeMapping) {
  EXPECT_EQ(hf_to_gguf_name("model.layers.1.block_sparse_moe.gate.weight", Arch::Llama),
            "blk.1.ffn_gate_inp.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.1.block_sparse_moe.experts.7.w1.weight", Arch::Llama),
            "blk.1.ffn_gate.7.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.1.block_sparse_moe.experts.7.w2.weight", Arch::Llama),
            "blk.1.ffn_down.7.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.1.block_sparse_moe.experts.7.w3.weight", Arch::Llama),
            "blk.1.ffn_up.7.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.mlp.experts.12.up_proj.weight", Arch::Qwen3Moe),
            "blk.0.ffn_up.12.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.mlp.gate.weight", Arch::Qwen2Moe), "blk.0.ffn_gate_inp.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.mlp.shared_expert.down_proj.weight", Arch::Qwen2Moe),
            "blk.0.ffn_down_shexp.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.mlp.shared_expert_gate.weight", Arch::Qwen2Moe),
            "blk.0.ffn_gate_inp_shexp.weight");
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.mlp.experts.x.up_proj.weight", Arch::Qwen3Moe), "");
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.mlp.experts.3.w4.weight", Arch::Qwen3Moe), "");
}

nlohmann::json moe_config(const std::string& type) {
  return {{"model_type", type}, {"num_hidden_layers", 2}, {"hidden_size", 64}, {"intermediate_size", 128},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"vocab_size", 256}, {"hidden_act", "silu"},
          {"num_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 32}};
}

TEST(HFConfig, MoeFields) {
  auto c = config_from_hf_json(moe_config("qwen3_moe"), true);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Arch::Qwen3Moe);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_EQ(c->moe.n_expert, 8);
  EXPECT_EQ(c->moe.n_expert_used, 2);
  EXPECT_EQ(c->moe.n_ff_expert, 32);
  EXPECT_FALSE(c->moe.norm_topk_prob);  // transformers' default for Qwen-MoE

  nlohmann::json mixtral = moe_config("mixtral");
  mixtral.erase("num_experts");
  mixtral.erase("moe_intermediate_size");
  mixtral["num_local_experts"] = 4;
  c = config_from_hf_json(mixtral, true);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Arch::Llama);
  EXPECT_EQ(c->moe.n_expert, 4);
  EXPECT_EQ(c->moe.n_ff_expert, 128);  // Mixtral's experts use intermediate_size
  EXPECT_TRUE(c->moe.norm_topk_prob);

  nlohmann::json bad = moe_config("qwen2_moe");
  bad["num_experts_per_tok"] = 9;
  c = config_from_hf_json(bad, true);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("experts used per token"), std::string::npos) << c.status().message();
  bad = moe_config("qwen2_moe");
  bad["mlp_only_layers"] = {1};
  c = config_from_hf_json(bad, true);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
  bad = moe_config("qwen2_moe");
  bad["num_experts"] = "8";
  EXPECT_FALSE(config_from_hf_json(bad, true).ok());
}

TEST(HFFolder, LlamaHappyPath) {
  TempDir dir;
  auto ts = hf_tensors(false, "BF16");
  ts.push_back({"lm_head.weight", "F16", {16, 32}});
  auto m = open_folder(dir, llama_config(), ts);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config;
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_FLOAT_EQ(c.rope_base, 500000.f);
  EXPECT_TRUE(c.rope_neox);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_EQ(c.n_ctx_train, 2048);
  EXPECT_EQ((*m)->format, "safetensors");
  EXPECT_EQ((*m)->gguf(), nullptr);
  EXPECT_EQ((*m)->tensors().size(), 12u);
  const TensorView* k = (*m)->tensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->type, DType::BF16);
  EXPECT_EQ(k->ne[0], 32);  // HF [out=16, in=32] -> ne {32, 16}
  EXPECT_EQ(k->ne[1], 16);
  EXPECT_EQ(k->nbytes, 16 * 32 * 2);
  uint16_t b;
  std::memcpy(&b, k->data + 2 * 5, 2);
  EXPECT_FLOAT_EQ(bf16_to_fp32(b), 3.f);  // element 5 = (5 + 1) * 0.5
  // Non-Gemma norms are untouched (no +1).
  std::memcpy(&b, (*m)->tensor("blk.0.ffn_norm.weight")->data, 2);
  EXPECT_FLOAT_EQ(bf16_to_fp32(b), 0.5f);
  EXPECT_EQ((*m)->tensor("output.weight")->type, DType::F16);
}

TEST(HFFolder, GemmaPlusOneAndConfig) {
  TempDir dir;
  auto m = open_folder(dir, gemma_config(), hf_tensors(true, "BF16"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config;
  EXPECT_EQ(c.arch, Arch::Gemma3);
  EXPECT_TRUE(c.tied_embeddings && c.qk_norm && c.sandwich_norms && c.rope_neox);
  EXPECT_FLOAT_EQ(c.attn_scale, 0.25f);  // 16^-0.5
  EXPECT_NEAR(c.embed_scale, std::sqrt(32.f), 1e-5f);
  EXPECT_FLOAT_EQ(c.rope_base_local, 1e4f);
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_TRUE(c.is_windowed(0));
  EXPECT_EQ(c.final_logit_softcap, 0.f);
  for (const char* n : {"output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight",
                        "blk.0.post_attention_norm.weight", "blk.0.post_ffw_norm.weight",
                        "blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight"}) {
    const TensorView* t = (*m)->tensor(n);
    ASSERT_NE(t, nullptr) << n;
    ASSERT_EQ(t->type, DType::F32) << n;
    EXPECT_EQ(t->nbytes, t->n_elements() * 4);
    const float* w = reinterpret_cast<const float*>(t->data);
    for (int64_t i = 0; i < t->n_elements(); ++i) {
      ASSERT_FLOAT_EQ(w[i], 1.f + (float)(i + 1) * 0.5f) << n << "[" << i << "]";
    }
  }
  EXPECT_EQ((*m)->tensor("blk.0.attn_q.weight")->type, DType::BF16);  // projections untouched
}

TEST(HFFolder, GemmaPatternAndRopeParameters) {
  TempDir dir;
  json cfg = gemma_config();
  cfg.erase("layer_types");
  cfg.erase("rope_theta");
  cfg.erase("rope_local_base_freq");
  cfg["num_hidden_layers"] = 1;
  cfg["sliding_window_pattern"] = 1;  // every layer global
  cfg["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0},
                                                {"rope_theta", 2e6}}},
                            {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 5e3}}}};
  auto m = open_folder(dir, cfg, hf_tensors(true));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_FALSE((*m)->config.is_windowed(0));
  EXPECT_FLOAT_EQ((*m)->config.rope_base, 2e6f);
  EXPECT_FLOAT_EQ((*m)->config.rope_base_local, 5e3f);
  EXPECT_EQ((*m)->config.rope_scaling.type, RopeScalingType::Linear);
  EXPECT_DOUBLE_EQ((*m)->config.rope_scaling.factor, 8.0);
  EXPECT_EQ((*m)->config.rope_scaling_local.type, RopeScalingType::None);
}

TEST(HFFolder, Qwen2AndMistralWindows) {
  TempDir dir;
  json cfg = llama_config();
  cfg["architectures"] = {"Qwen2ForCausalLM"};
  cfg["model_type"] = "qwen2";
  cfg["sliding_window"] = 128;
  cfg["use_sliding_window"] = false;
  cfg["tie_word_embeddings"] = true;
  auto ts = hf_tensors(false);
  ts.push_back({"model.layers.0.self_attn.q_proj.bias", "F32", {32}});
  ts.push_back({"model.layers.0.self_attn.k_proj.bias", "F32", {16}});
  ts.push_back({"model.layers.0.self_attn.v_proj.bias", "F32", {16}});
  auto m = open_folder(dir, cfg, ts);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE((*m)->config.attn_qkv_bias);
  EXPECT_TRUE((*m)->config.tied_embeddings);
  EXPECT_FALSE((*m)->config.is_windowed(0));
  EXPECT_EQ((*m)->tensor("blk.0.attn_v.bias")->ne[0], 16);

  cfg["use_sliding_window"] = true;
  cfg["max_window_layers"] = 0;
  m = open_folder(dir, cfg, ts);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE((*m)->config.is_windowed(0));

  ts.pop_back();
  expect_error(open_folder(dir, cfg, ts), StatusCode::kNotFound, "'blk.0.attn_v.bias'");

  json mc = llama_config();
  mc["architectures"] = {"MistralForCausalLM"};
  mc["model_type"] = "mistral";
  mc["sliding_window"] = 64;
  m = open_folder(dir, mc, hf_tensors(false));  // no lm_head: tied
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config.arch, Arch::Mistral);
  EXPECT_TRUE((*m)->config.is_windowed(0));
  EXPECT_TRUE((*m)->config.tied_embeddings);
  mc["sliding_window"] = nullptr;
  m = open_folder(dir, mc, hf_tensors(false));
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE((*m)->config.is_windowed(0));
}

TEST(HFFolder, ConfigErrors) {
  TempDir dir;
  for (const char* field : {"hidden_size", "num_hidden_layers", "num_attention_heads",
                            "intermediate_size", "vocab_size"}) {
    json cfg = llama_config();
    cfg.erase(field);
    expect_error(open_folder(dir, cfg, hf_tensors(false)), StatusCode::kNotFound, field);
  }
  json cfg = llama_config();
  cfg["hidden_size"] = "big";
  expect_error(open_folder(dir, cfg, hf_tensors(false)), StatusCode::kCorrupt, "'hidden_size'");
  cfg = llama_config();
  cfg["architectures"] = {"GPT2LMHeadModel"};
  cfg["model_type"] = "gpt2";
  expect_error(open_folder(dir, cfg, hf_tensors(false)), StatusCode::kUnsupported,
               "GPT2LMHeadModel");
  cfg = llama_config();
  cfg["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 8.0}};
  expect_error(open_folder(dir, cfg, hf_tensors(false)), StatusCode::kUnsupported, "dynamic");
  cfg = llama_config();
  cfg["num_key_value_heads"] = 3;
  expect_error(open_folder(dir, cfg, hf_tensors(false)), StatusCode::kCorrupt, "n_head_kv 3");
  dir.write("config.json", "{not json");
  expect_error(open_model(dir.path()), StatusCode::kCorrupt, "config.json is not valid JSON");
  auto ts = hf_tensors(false);
  ts[4].shape = {8, 32};
  expect_error(open_folder(dir, llama_config(), ts), StatusCode::kCorrupt,
               "'blk.0.attn_k.weight' has shape [32, 8], expected [32, 16]");
  TempDir empty;
  empty.write("config.json", llama_config().dump());
  expect_error(open_model(empty.path()), StatusCode::kNotFound, "no *.safetensors");
}

Expected<std::vector<TensorView>> parse_st(const TempDir& dir, const std::string& bytes) {
  auto mf = MappedFile::open(dir.write("t.safetensors", bytes));
  if (!mf.ok()) return mf.status();
  return parse_safetensors(*mf);  // views die with mf: tests only inspect the Status
}

void expect_st_error(const std::string& bytes, StatusCode code, const std::string& needle) {
  TempDir dir;
  auto r = parse_st(dir, bytes);
  ASSERT_FALSE(r.ok()) << "expected failure mentioning: " << needle;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(needle), std::string::npos)
      << "message '" << r.status().message() << "' lacks '" << needle << "'";
}

TEST(Safetensors, CorruptFiles) {
  const std::string good = build_safetensors({{"w", "F32", {2, 3}}});
  {
    TempDir dir;
    auto r = parse_st(dir, good);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].ne[0], 3);
    EXPECT_EQ((*r)[0].ne[1], 2);
  }
  for (size_t n = 0; n < good.size(); ++n) {
    TempDir dir;
    auto r = parse_st(dir, good.substr(0, n));
    EXPECT_FALSE(r.ok()) << "prefix " << n;
  }
  expect_st_error("abc", StatusCode::kCorrupt, "too small for the header length");
  Bytes huge;
  huge.u64(1ull << 60);
  expect_st_error(huge.b + "{}", StatusCode::kCorrupt, "header length 1152921504606846976 exceeds");
  Bytes past;
  past.u64(1000);
  expect_st_error(past.b + "{}", StatusCode::kCorrupt, "header length 1000 extends past end");
  expect_st_error(raw_safetensors("{\"w\": [", ""), StatusCode::kCorrupt, "not valid JSON");
  expect_st_error(raw_safetensors("[1,2]", ""), StatusCode::kCorrupt, "not a JSON object");
  const std::string d24(24, '\0');
  expect_st_error(raw_safetensors(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,48]}})", d24),
                  StatusCode::kCorrupt, "tensor 'w' data_offsets [0, 48] extend past end of data");
  expect_st_error(raw_safetensors(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", d24),
                  StatusCode::kCorrupt, "tensor 'w' data_offsets span 20 bytes but shape and dtype need 24");
  expect_st_error(raw_safetensors(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[8,4]}})", d24),
                  StatusCode::kCorrupt, "begin 8 > end 4");
  expect_st_error(raw_safetensors(R"({"w":{"dtype":"I8","shape":[2,3],"data_offsets":[0,6]}})", d24),
                  StatusCode::kUnsupported, "tensor 'w' has dtype I8");
  expect_st_error(raw_safetensors(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", d24),
                  StatusCode::kCorrupt, "tensor 'w' shape element count overflows");
  expect_st_error(raw_safetensors(R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,8]}})", d24),
                  StatusCode::kCorrupt, "tensor 'w' shape[1]");
  expect_st_error(raw_safetensors(R"({"w":{"dtype":"F32","shape":[6],"data_offsets":[0]}})", d24),
                  StatusCode::kCorrupt, "tensor 'w' data_offsets must be");
  expect_st_error(raw_safetensors(R"({"w":{"shape":[6],"data_offsets":[0,24]}})", d24),
                  StatusCode::kCorrupt, "tensor 'w' has no string 'dtype'");
  expect_st_error(raw_safetensors(R"({"w":{"dtype":"F32","shape":[1,1,1,1,6],"data_offsets":[0,24]}})", d24),
                  StatusCode::kUnsupported, "5 dims");
}

}  // namespace
}  // namespace stride
