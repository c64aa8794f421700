// The two real models in models/: concrete facts checked against gguf-py's
// reading of the same files (values hand-copied from its output).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "loader/gguf_file.h"
#include "loader/model_info.h"
#include "loader/model_source.h"

namespace stride {
namespace {

const std::string kSmol = std::string(STRIDE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
const std::string kGemma = std::string(STRIDE_SOURCE_DIR) + "/models/gemma-3-270m-q4_k_m.gguf";

std::string read_bytes(const std::string& path, uint64_t offset, size_t n) {
  std::ifstream in(path, std::ios::binary);
  in.seekg((std::streamoff)offset);
  std::string s(n, '\0');
  in.read(s.data(), (std::streamsize)n);
  return s;
}

TEST(RealModels, SmolLM2GGUFFile) {
  auto f = GGUFFile::open(kSmol);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ((*f)->tensors().size(), 272u);
  EXPECT_EQ((*f)->keys().size(), 33u);
  EXPECT_EQ((*f)->get_string("general.architecture").value(), "llama");
  EXPECT_EQ((*f)->get_int("llama.block_count").value(), 30);
  EXPECT_FLOAT_EQ((float)(*f)->get_float("llama.rope.freq_base").value(), 100000.f);
  EXPECT_FALSE((*f)->get_bool("tokenizer.ggml.add_bos_token").value());
  EXPECT_EQ((*f)->get_string("tokenizer.ggml.pre").value(), "smollm");
  auto toks = (*f)->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(toks.ok());
  EXPECT_EQ(toks->size(), 49152u);
  auto langs = (*f)->get_string_array("general.languages");
  ASSERT_TRUE(langs.ok());
  EXPECT_EQ(*langs, std::vector<std::string>{"en"});
  // Type mismatches and missing keys are reported, not guessed.
  EXPECT_EQ((*f)->get_int("general.name").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->get_int("no.such.key").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*f)->get_int_or("no.such.key", 7), 7);
  EXPECT_EQ((*f)->get_string_array("llama.block_count").status().code(),
            StatusCode::kInvalidArgument);

  const TensorView* emb = (*f)->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, DType::Q8_0);
  EXPECT_EQ(emb->ne[0], 576);
  EXPECT_EQ(emb->ne[1], 49152);
  EXPECT_EQ(emb->nbytes, 30081024);
  // The view points at the file's bytes at gguf-py's absolute offset.
  EXPECT_EQ(std::string((const char*)emb->data, 8), read_bytes(kSmol, 1785664, 8));
  const TensorView* norm = (*f)->find_tensor("blk.0.attn_norm.weight");
  ASSERT_NE(norm, nullptr);
  float w0;
  std::memcpy(&w0, norm->data, 4);
  EXPECT_NEAR(w0, 0.01397705f, 1e-7f);
}

TEST(RealModels, SmolLM2Config) {
  auto src = open_model(kSmol);
  ASSERT_TRUE(src.ok()) << src.status().to_string();
  const ModelConfig& c = (*src)->config;
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_EQ(c.n_layer, 30);
  EXPECT_EQ(c.n_head, 9);
  EXPECT_EQ(c.n_head_kv, 3);
  EXPECT_EQ(c.n_embd, 576);
  EXPECT_EQ(c.n_ff, 1536);
  EXPECT_EQ(c.n_vocab, 49152);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.head_dim_v, 64);
  EXPECT_EQ(c.rope_dim, 64);
  EXPECT_EQ(c.n_ctx_train, 8192);
  EXPECT_FLOAT_EQ(c.rope_base, 100000.f);
  EXPECT_NEAR(c.norm_eps, 1e-5f, 1e-9f);
  EXPECT_FALSE(c.rope_neox);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.sliding_window, 0);
  for (int il = 0; il < 30; ++il) EXPECT_FALSE(c.is_windowed(il));
  EXPECT_EQ((*src)->format, "gguf");
  EXPECT_EQ((*src)->tensors().size(), 272u);
  ASSERT_NE((*src)->gguf(), nullptr);
  EXPECT_EQ((*src)->weight_bytes(), 96576768);
  EXPECT_EQ((*src)->tensor("token_embd.weight")->type, DType::Q8_0);
  EXPECT_EQ((*src)->tensor("output.weight"), nullptr);
}

TEST(RealModels, GemmaConfig) {
  auto src = open_model(kGemma);
  ASSERT_TRUE(src.ok()) << src.status().to_string();
  const ModelConfig& c = (*src)->config;
  EXPECT_EQ(c.arch, Arch::Gemma3);
  EXPECT_EQ(c.n_layer, 18);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_head_kv, 1);
  EXPECT_EQ(c.n_embd, 640);
  EXPECT_EQ(c.n_ff, 2048);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.n_vocab, 262144);
  EXPECT_EQ(c.n_ctx_train, 32768);
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_FLOAT_EQ(c.rope_base, 1e6f);
  EXPECT_FLOAT_EQ(c.rope_base_local, 1e4f);
  EXPECT_TRUE(c.rope_neox);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_TRUE(c.sandwich_norms);
  EXPECT_EQ(c.act, Activation::GeluTanh);
  EXPECT_NEAR(c.embed_scale, std::sqrt(640.f), 1e-4f);
  EXPECT_NEAR(c.attn_scale, 1.f / 16.f, 1e-7f);
  EXPECT_TRUE(c.tied_embeddings);
  for (int il = 0; il < 18; ++il) {
    const bool global = il == 5 || il == 11 || il == 17;
    EXPECT_EQ(c.is_windowed(il), !global) << "layer " << il;
  }
  EXPECT_EQ((*src)->tensors().size(), 236u);
  EXPECT_EQ((*src)->weight_bytes(), 246587904);
  // GGUF Gemma norms already hold 1 + w; the first values per gguf-py:
  float w[2];
  std::memcpy(w, (*src)->tensor("blk.0.attn_norm.weight")->data, 8);
  EXPECT_FLOAT_EQ(w[0], 16.f);
  EXPECT_FLOAT_EQ(w[1], 16.875f);
}

TEST(RealModels, DescribeGemma) {
  auto src = open_model(kGemma);
  ASSERT_TRUE(src.ok()) << src.status().to_string();
  const std::string text = describe_model(**src);
  EXPECT_NE(text.find("gemma3"), std::string::npos) << text;
  EXPECT_NE(text.find("layers 0-4,6-10,12-16: window 512; 5,11,17: global"), std::string::npos)
      << text;
  EXPECT_NE(text.find("F32 x109, Q5_0 x81, Q4_K x27, Q8_0 x10, Q6_K x9"), std::string::npos)
      << text;
  const auto j = describe_model_json(**src);
  EXPECT_EQ(j["architecture"], "gemma3");
  EXPECT_EQ(j["global_layers"], (std::vector<int>{5, 11, 17}));
  EXPECT_EQ(j["tensor_types"]["Q4_K"], 27);
  EXPECT_EQ(j["weight_bytes"], 246587904);
  EXPECT_EQ(j["file_bytes"], (*src)->gguf()->file_size());
}

TEST(RealModels, DescribeSmol) {
  auto src = open_model(kSmol);
  ASSERT_TRUE(src.ok());
  const std::string text = describe_model(**src);
  EXPECT_NE(text.find("Q4_1 x210, F32 x61, Q8_0 x1"), std::string::npos) << text;
  EXPECT_NE(text.find("none (all layers global)"), std::string::npos) << text;
  EXPECT_NE(text.find("98362432"), std::string::npos) << text;  // file size
}

TEST(RealModels, TruncatedHeaderRegion) {
  // Every prefix of the first 4 KiB of a real file, and a few cuts through
  // the metadata and tensor-info region, must fail cleanly.
  auto full = MappedFile::open(kSmol);
  ASSERT_TRUE(full.ok());
  const std::string head((const char*)full->data(), 1 << 21);
  char tmpl[] = "/tmp/stride_trunc_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string p = dir + "/t.gguf";
  std::vector<size_t> cuts;
  for (size_t n = 0; n < 4096; n += 7) cuts.push_back(n);
  for (size_t n = 4096; n < head.size(); n += 65537) cuts.push_back(n);
  for (size_t n : cuts) {
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(head.data(), (std::streamsize)n);
    auto f = GGUFFile::open(p);
    ASSERT_FALSE(f.ok()) << "prefix " << n;
    EXPECT_EQ(f.status().code(), StatusCode::kCorrupt) << n << ": " << f.status().message();
    EXPECT_NE(f.status().message().find("GGUF"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stride
