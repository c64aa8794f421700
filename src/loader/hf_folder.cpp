// Hugging Face folder: config.json + *.safetensors, renamed to GGUF names so
// the same architecture code runs on both formats.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/fp16.h"
#include "loader/arch_gpt_oss.h"
#include "loader/fused_tensors.h"
#include "loader/hf_config.h"
#include "loader/hf_names.h"
#include "loader/json_file.h"
#include "loader/model_source.h"
#include "loader/model_tensors.h"
#include "loader/safetensors.h"

namespace stride {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Expected<json> read_json(const fs::path& p) { return read_json_file(p.string()); }

// Gemma RMSNorm computes x * (1 + w); store 1 + w as F32 so the model code
// can use every norm weight as a plain multiplier (as Gemma GGUF files do).
void add_one_to_norm(ModelSource& src, TensorView& t) {
  const int64_t n = t.n_elements();
  float* out = reinterpret_cast<float*>(src.own_buffer((size_t)n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) {
    float w = 0.f;
    if (t.type == DType::F32) {
      std::memcpy(&w, t.data + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, t.data + 2 * i, 2);
      w = t.type == DType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
    }
    out[i] = 1.f + w;
  }
  t.type = DType::F32;
  t.data = reinterpret_cast<const uint8_t*>(out);
  t.nbytes = n * (int64_t)sizeof(float);
}

// The shard list: every *.safetensors file, checked against the index if any.
Expected<std::vector<fs::path>> list_shards(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec) && e.path().extension() == ".safetensors") files.push_back(e.path());
  }
  if (ec) return IoError("cannot list " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    STRIDE_ASSIGN_OR_RETURN(json idx, read_json(index));
    auto wm = idx.find("weight_map");
    if (!idx.is_object() || wm == idx.end() || !wm->is_object()) {
      return Corrupt("model.safetensors.index.json: missing 'weight_map' object");
    }
    for (const auto& [name, file] : wm->items()) {
      if (!file.is_string()) return Corrupt("model.safetensors.index.json: bad entry for " + name);
      const fs::path shard = dir / file.get<std::string>();
      if (std::find(files.begin(), files.end(), shard) == files.end()) {
        return NotFound("model.safetensors.index.json: shard '" + file.get<std::string>() +
                        "' for tensor '" + name + "' is missing");
      }
    }
  }
  if (files.empty()) return NotFound("no *.safetensors files in " + dir.string());
  return files;
}

Status load_folder(const std::string& dir, ModelSource& src) {
  STRIDE_ASSIGN_OR_RETURN(json cfg_json, read_json(fs::path(dir) / "config.json"));
  STRIDE_ASSIGN_OR_RETURN(std::vector<fs::path> shards, list_shards(dir));
  std::map<std::string, TensorView> hf;  // HF name -> view into a shard
  for (const fs::path& p : shards) {
    STRIDE_ASSIGN_OR_RETURN(MappedFile mf, MappedFile::open(p.string()));
    STRIDE_ASSIGN_OR_RETURN(std::vector<TensorView> views, parse_safetensors(mf));
    for (TensorView& v : views) {
      if (hf.count(v.name)) {
        return Corrupt("safetensors: tensor '" + v.name + "' appears in more than one file");
      }
      hf[v.name] = std::move(v);
    }
    src.own_file(std::move(mf));  // mapping address is unchanged by the move
  }
  const bool has_lm_head = hf.count("lm_head.weight") || hf.count("language_model.lm_head.weight");
  STRIDE_ASSIGN_OR_RETURN(src.config, config_from_hf_json(cfg_json, has_lm_head));
  const Arch arch = src.config.arch;
  if (arch == Arch::GptOss) STRIDE_RETURN_IF_ERROR(take_gpt_oss_hf_experts(src, hf));
  for (auto& [name, view] : hf) {
    std::string g = hf_to_gguf_name(name, arch);
    if (g.empty()) g = name;  // unknown extras keep their HF name
    if (g == "output.weight" && src.config.tied_embeddings) continue;
    if (src.tensor(g)) return Corrupt("safetensors: two tensors map to '" + g + "'");
    view.name = g;
    const bool is_norm = g.size() > 11 && g.compare(g.size() - 11, 11, "norm.weight") == 0;
    if ((arch == Arch::Gemma2 || arch == Arch::Gemma3) && is_norm) add_one_to_norm(src, view);
    src.add_tensor(std::move(view));
  }
  STRIDE_RETURN_IF_ERROR(split_fused_tensors(src));
  return check_model_tensors(src);
}

}  // namespace

Expected<std::unique_ptr<ModelSource>> open_hf_folder(const std::string& dir) {
  auto src = std::make_unique<ModelSource>();
  src->path = dir;
  src->format = "safetensors";
  Status st;
  try {
    st = load_folder(dir, *src);
  } catch (const std::exception& e) {  // filesystem / json errors stay inside the loader
    st = Corrupt(std::string("HF folder: ") + e.what());
  }
  if (!st.ok()) return Status(st.code(), st.message() + " [" + dir + "]");
  return src;
}

}  // namespace stride
