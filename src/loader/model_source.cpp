// ModelSource bookkeeping and the GGUF model path.
#include "loader/model_source.h"

#include <filesystem>
#include <system_error>

#include "loader/arch_gpt_oss.h"
#include "loader/encrypted_file.h"
#include "loader/fused_tensors.h"
#include "loader/model_tensors.h"

namespace stride {

const TensorView* ModelSource::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void ModelSource::drop_resident(const TensorView& t) const {
  if (t.valid() && t.nbytes > 0) drop_resident(t.data, (uint64_t)t.nbytes);
}

void ModelSource::drop_resident(const void* p, uint64_t n) const {
  if (gguf_ && gguf_->file().drop_resident(p, n)) return;
  for (const MappedFile& f : files_)
    if (f.drop_resident(p, n)) return;
}

bool ModelSource::read_back(const void* p, uint64_t n, void* dst) const {
  if (gguf_ && gguf_->file().read_at(p, n, dst)) return true;
  for (const MappedFile& f : files_)
    if (f.read_at(p, n, dst)) return true;
  return false;
}

int64_t ModelSource::weight_bytes() const {
  int64_t total = 0;
  for (const auto& [name, t] : tensors_) total += t.nbytes;
  return total;
}

bool ModelSource::rename_tensor(const std::string& from, const std::string& to) {
  auto it = tensors_.find(from);
  if (it == tensors_.end() || tensors_.count(to)) return false;
  TensorView t = std::move(it->second);
  tensors_.erase(it);
  t.name = to;
  tensors_[to] = std::move(t);
  return true;
}

uint8_t* ModelSource::own_buffer(size_t bytes) {
  buffers_.push_back(std::make_unique<uint8_t[]>(bytes));
  return buffers_.back().get();
}

Expected<std::unique_ptr<GGUFFile>> open_gguf_file(const std::string& path) {
  if (!is_encrypted_model(path)) return GGUFFile::open(path);
  // Encrypted at rest: decrypt into anonymous memory, then parse as usual.
  STRIDE_ASSIGN_OR_RETURN(ModelKey key, model_key_for(path));
  STRIDE_ASSIGN_OR_RETURN(MappedFile plain, decrypt_to_memory(path, key));
  return GGUFFile::parse(std::move(plain));
}

Expected<std::unique_ptr<ModelSource>> open_gguf_model(const std::string& path) {
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<GGUFFile> file, open_gguf_file(path));
  auto cfg = config_from_gguf(*file);
  if (!cfg.ok()) {
    return Status(cfg.status().code(), cfg.status().message() + " [" + path + "]");
  }
  auto src = std::make_unique<ModelSource>();
  src->config = std::move(*cfg);
  src->path = path;
  src->format = "gguf";
  for (const TensorView& t : file->tensors()) src->add_tensor(t);
  if (src->config.arch == Arch::GptOss) STRIDE_RETURN_IF_ERROR(adapt_gpt_oss_gguf_tensors(*src));
  src->own_gguf(std::move(file));  // views point into its map
  Status st = split_fused_tensors(*src);
  if (st.ok()) st = check_model_tensors(*src);
  if (!st.ok()) return Status(st.code(), st.message() + " [" + path + "]");
  return src;
}

Expected<std::unique_ptr<ModelSource>> open_model(const std::string& path, const RopeOverride& rope) {
  std::error_code ec;
  auto src = std::filesystem::is_directory(path, ec) ? open_hf_folder(path) : open_gguf_model(path);
  if (!src) return src;
  const Status st = apply_rope_override(rope, (*src)->config);
  if (!st.ok()) return Status(st.code(), st.message() + " [" + path + "]");
  return src;
}

}  // namespace stride
