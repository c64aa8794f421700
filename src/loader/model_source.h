#pragma once
// What every loader produces: a config plus tensors under GGUF names
// ("token_embd.weight", "blk.N.attn_q.weight", ...), so GGUF files and HF
// folders feed the same architecture code.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor.h"
#include "loader/gguf_file.h"
#include "loader/model_config.h"
#include "loader/rope_override.h"

namespace stride {

class ModelSource {
 public:
  ModelConfig config;
  std::string path;
  std::string format;  // "gguf" or "safetensors"

  const TensorView* tensor(const std::string& name) const;
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  // The GGUF file (tokenizer metadata lives there); nullptr for HF folders.
  const GGUFFile* gguf() const { return gguf_.get(); }
  int64_t weight_bytes() const;
  // Drops the resident pages of a tensor mapped from a file (its bytes stay
  // readable, from the file); a no-op for tensors in memory buffers.
  void drop_resident(const TensorView& t) const;
  void drop_resident(const void* p, uint64_t n) const;
  // [p, p + n) of a mapped file, read with pread (MappedFile::read_at).
  bool read_back(const void* p, uint64_t n, void* dst) const;

  // Loader-facing construction.
  void add_tensor(TensorView view) { tensors_[view.name] = std::move(view); }
  void remove_tensor(const std::string& name) { tensors_.erase(name); }
  // Moves a tensor to another name (architectures whose files name a shared
  // role differently); false when `from` is absent or `to` is taken.
  bool rename_tensor(const std::string& from, const std::string& to);
  void own_gguf(std::unique_ptr<GGUFFile> f) { gguf_ = std::move(f); }
  void own_file(MappedFile f) { files_.push_back(std::move(f)); }
  // A buffer the source keeps alive (converted tensors); returns its data.
  uint8_t* own_buffer(size_t bytes);

 private:
  std::map<std::string, TensorView> tensors_;
  std::unique_ptr<GGUFFile> gguf_;
  std::vector<MappedFile> files_;
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
};

// Opens a .gguf file or an HF folder (config.json + *.safetensors); `rope`
// replaces the RoPE settings the file gives.
Expected<std::unique_ptr<ModelSource>> open_model(const std::string& path, const RopeOverride& rope = {});

// Exposed for tests and `stride info`.
Expected<ModelConfig> config_from_gguf(const GGUFFile& f);
Expected<std::unique_ptr<ModelSource>> open_gguf_model(const std::string& path);
// The GGUF file alone (tokenizer, metadata); an encrypted file is decrypted
// with the key from model_key_for().
Expected<std::unique_ptr<GGUFFile>> open_gguf_file(const std::string& path);
Expected<std::unique_ptr<ModelSource>> open_hf_folder(const std::string& dir);

}  // namespace stride
