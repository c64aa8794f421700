#include "loader/model_info.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

namespace stride {

namespace {

namespace fs = std::filesystem;

// Bytes on disk: the GGUF file, or every shard of an HF folder.
uint64_t file_bytes(const ModelSource& src) {
  if (src.gguf()) return src.gguf()->file_size();
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(src.path, ec)) {
    if (e.is_regular_file(ec) && e.path().extension() == ".safetensors") {
      total += e.file_size(ec);
    }
  }
  return total;
}

// Dtype counts, most frequent first.
std::vector<std::pair<std::string, int>> type_counts(const ModelSource& src) {
  std::map<std::string, int> counts;
  for (const auto& [name, t] : src.tensors()) ++counts[dtype_name(t.type)];
  std::vector<std::pair<std::string, int>> out(counts.begin(), counts.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::vector<int> layers_where(const ModelConfig& c, bool windowed) {
  std::vector<int> out;
  for (int il = 0; il < c.n_layer; ++il) {
    if (c.is_windowed(il) == windowed) out.push_back(il);
  }
  return out;
}

std::string window_summary(const ModelConfig& c) {
  const std::vector<int> win = layers_where(c, true), glob = layers_where(c, false);
  if (win.empty()) return "none (all layers global)";
  if (glob.empty()) return "all layers: window " + std::to_string(c.sliding_window);
  return "layers " + format_layer_ranges(win) + ": window " + std::to_string(c.sliding_window) +
         "; " + format_layer_ranges(glob) + ": global";
}

std::string human_bytes(uint64_t b) {
  std::ostringstream os;
  os.precision(1);
  os << std::fixed;
  if (b >= (1ull << 30)) os << b / double(1ull << 30) << " GiB";
  else if (b >= (1ull << 20)) os << b / double(1ull << 20) << " MiB";
  else os << b << " B";
  return os.str();
}

nlohmann::json rope_scaling_json(const RopeScaling& s) {
  nlohmann::json j{{"type", rope_scaling_name(s.type)}};
  if (!s.scaled()) return j;
  j["factor"] = s.factor;
  j["original_context"] = s.original_context;
  if (s.attn_factor > 0) j["attention_factor"] = s.attn_factor;
  if (s.type == RopeScalingType::Yarn) {
    j["beta_fast"] = s.beta_fast;
    j["beta_slow"] = s.beta_slow;
    j["truncate"] = s.truncate;
  }
  if (s.type == RopeScalingType::Llama3) {
    if (s.freq_factors.empty()) {
      j["low_freq_factor"] = s.low_freq_factor;
      j["high_freq_factor"] = s.high_freq_factor;
    } else {
      j["freq_factors"] = s.freq_factors;
    }
  }
  if (s.type == RopeScalingType::LongRope) {
    j["short_factor"] = s.short_factor;
    j["long_factor"] = s.long_factor;
  }
  return j;
}

}  // namespace

std::string format_layer_ranges(const std::vector<int>& layers) {
  std::ostringstream os;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    if (i) os << ",";
    os << layers[i];
    if (j > i) os << "-" << layers[j];
    i = j + 1;
  }
  return os.str();
}

namespace {

// Bytes of the routed experts' weights (3-D "_exps" tensors or per-expert
// "ffn_gate.E.weight" ones): of these a token reads only used / count.
int64_t routed_expert_bytes(const ModelSource& src) {
  int64_t bytes = 0;
  for (const auto& [name, t] : src.tensors()) {
    const bool stacked = name.find("_exps.") != std::string::npos;
    const bool per_expert = name.rfind("blk.", 0) == 0 && name.find(".ffn_") != std::string::npos &&
                            std::count(name.begin(), name.end(), '.') == 4;  // blk.N.ffn_up.E.weight
    if (stacked || per_expert) bytes += t.nbytes;
  }
  return bytes;
}

// Weights one token reads: all but the experts it is not routed to.
int64_t active_weight_bytes(const ModelSource& src) {
  const MoeConfig& m = src.config.moe;
  if (!m.active()) return src.weight_bytes();
  const int64_t routed = routed_expert_bytes(src);
  return src.weight_bytes() - routed + routed * m.n_expert_used / m.n_expert;
}

}  // namespace

std::string describe_model(const ModelSource& src) {
  const ModelConfig& c = src.config;
  std::ostringstream os;
  os << "path:            " << src.path << " (" << src.format << ")\n";
  os << "architecture:    " << arch_name(c.arch) << "\n";
  os << "layers:          " << c.n_layer << "\n";
  os << "heads:           " << c.n_head << " (kv " << c.n_head_kv << "), head dim "
     << c.head_dim;
  if (c.head_dim_v != c.head_dim) os << " (v " << c.head_dim_v << ")";
  os << "\n";
  os << "n_embd:          " << c.n_embd << "\n";
  os << "n_ff:            " << c.n_ff << "\n";
  if (c.moe.active()) {
    os << "experts:         " << c.moe.n_expert << ", " << c.moe.n_expert_used << " used per token ("
       << (c.moe.norm_topk_prob ? "weights renormalised" : "softmax weights") << "), ff " << c.moe.n_ff_expert;
    if (c.moe.n_ff_shared > 0) os << ", shared expert ff " << c.moe.n_ff_shared;
    os << "\n";
  }
  os << "vocab:           " << c.n_vocab << "\n";
  os << "context length:  " << c.n_ctx_train;
  if (rope_usable_context(c.rope_scaling, c.n_ctx_train) != c.n_ctx_train)
    os << " (usable with rope scaling: " << rope_usable_context(c.rope_scaling, c.n_ctx_train) << ")";
  os << "\n";
  os << "rope:            base " << c.rope_base;
  if (c.rope_base_local != c.rope_base) os << ", local base " << c.rope_base_local;
  os << ", dims " << c.rope_dim << (c.rope_neox ? " (neox)" : " (adjacent pairs)") << "\n";
  os << "rope scaling:    " << rope_scaling_summary(c.rope_scaling);
  if (c.rope_scaling_local.type != c.rope_scaling.type) {
    os << "; windowed layers " << rope_scaling_summary(c.rope_scaling_local);
  }
  os << "\n";
  os << "sliding window:  " << window_summary(c) << "\n";
  os << "norm eps:        " << c.norm_eps << "\n";
  os << "features:        act " << (c.act == Activation::SiLU ? "silu" : "gelu_tanh")
     << (c.attn_qkv_bias ? ", qkv bias" : "") << (c.attn_out_bias ? ", output bias" : "")
     << (c.attn_sinks ? ", attention sinks" : "") << (c.qk_norm ? ", qk norm" : "")
     << (c.sandwich_norms ? ", sandwich norms" : "")
     << (c.tied_embeddings ? ", tied embeddings" : "") << "\n";
  os << "tensors:         " << src.tensors().size() << " (";
  bool first = true;
  for (const auto& [name, n] : type_counts(src)) {
    os << (first ? "" : ", ") << name << " x" << n;
    first = false;
  }
  os << ")\n";
  os << "weight bytes:    " << src.weight_bytes() << " (" << human_bytes(src.weight_bytes())
     << ")\n";
  if (c.moe.active()) {
    const int64_t active = active_weight_bytes(src);
    os << "active weights:  " << active << " (" << human_bytes(active) << ") per token\n";
  }
  const uint64_t fb = file_bytes(src);
  os << "file size:       " << fb << " (" << human_bytes(fb) << ")\n";
  return os.str();
}

nlohmann::json describe_model_json(const ModelSource& src) {
  const ModelConfig& c = src.config;
  nlohmann::json j;
  j["path"] = src.path;
  j["format"] = src.format;
  j["architecture"] = arch_name(c.arch);
  j["n_layer"] = c.n_layer;
  j["n_head"] = c.n_head;
  j["n_head_kv"] = c.n_head_kv;
  j["head_dim"] = c.head_dim;
  j["head_dim_v"] = c.head_dim_v;
  j["n_embd"] = c.n_embd;
  j["n_ff"] = c.n_ff;
  j["n_vocab"] = c.n_vocab;
  j["n_ctx_train"] = c.n_ctx_train;
  j["norm_eps"] = c.norm_eps;
  j["rope"] = {{"base", c.rope_base}, {"base_local", c.rope_base_local}, {"dims", c.rope_dim},
               {"neox", c.rope_neox}, {"scaling", rope_scaling_json(c.rope_scaling)},
               {"scaling_local", rope_scaling_json(c.rope_scaling_local)}};
  j["usable_context"] = rope_usable_context(c.rope_scaling, c.n_ctx_train);
  j["sliding_window"] = c.sliding_window;
  j["windowed_layers"] = layers_where(c, true);
  j["global_layers"] = layers_where(c, false);
  j["activation"] = c.act == Activation::SiLU ? "silu" : "gelu_tanh";
  j["attn_qkv_bias"] = c.attn_qkv_bias;
  j["attn_out_bias"] = c.attn_out_bias;
  j["attn_sinks"] = c.attn_sinks;
  j["qk_norm"] = c.qk_norm;
  j["sandwich_norms"] = c.sandwich_norms;
  j["tied_embeddings"] = c.tied_embeddings;
  j["experts"] = nullptr;
  if (c.moe.active()) {
    j["experts"] = {{"count", c.moe.n_expert},           {"used", c.moe.n_expert_used},
                    {"n_ff_expert", c.moe.n_ff_expert},  {"n_ff_shared", c.moe.n_ff_shared},
                    {"norm_topk_prob", c.moe.norm_topk_prob}, {"active_weight_bytes", active_weight_bytes(src)}};
  }
  j["embed_scale"] = c.embed_scale;
  j["attn_scale"] = c.attn_scale;
  j["attn_logit_softcap"] = c.attn_logit_softcap;
  j["final_logit_softcap"] = c.final_logit_softcap;
  j["n_tensors"] = src.tensors().size();
  nlohmann::json types = nlohmann::json::object();
  for (const auto& [name, n] : type_counts(src)) types[name] = n;
  j["tensor_types"] = types;
  j["weight_bytes"] = src.weight_bytes();
  j["file_bytes"] = file_bytes(src);
  return j;
}

}  // namespace stride
