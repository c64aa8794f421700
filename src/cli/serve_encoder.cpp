#include "cli/serve_encoder.h"

#include <chrono>
#include <filesystem>

#include "encoder/encoder_forward.h"
#include "core/sha256.h"
#include "http/log.h"

namespace stride::cli {

using server::LogLevel;
using server::log;

Expected<std::shared_ptr<server::ModelHandle>> load_encoder_version(const serving::ServeConfig& cfg,
                                                                    const server::ModelRef& ref,
                                                                    serving::Metrics& metrics) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::filesystem::path dir = std::filesystem::path(ref.path).lexically_normal();
  // The version's identity is its weights file.
  STRIDE_ASSIGN_OR_RETURN(std::string digest, sha256_file((dir / "model.safetensors").string()));
  if (!ref.sha256.empty() && ref.sha256 != digest) {
    return Corrupt("sha256 mismatch for " + (dir / "model.safetensors").string() + ": expected " + ref.sha256 +
                   ", got " + digest);
  }
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<EncoderModel> model, EncoderModel::open(dir.string()));
  const BertConfig c = model->config();
  const Pooling pooling = model->pooling();
  const bool normalize = model->normalize();
  {
    // Warm-up: page the weights in and size the kernels' scratch once.
    ThreadPool pool(cfg.threads);
    auto warm = encoder_embed(*model, {model->tokenizer().encode("warm up")}, pool);
    if (!warm.ok()) return Internal("warm-up failed: " + warm.status().message());
  }
  serving::EncoderServiceOptions so;
  so.threads = cfg.threads;
  so.max_queue = cfg.max_queue;
  auto m = std::make_shared<server::ModelHandle>();
  m->owned_encoder = std::make_unique<serving::EncoderService>(std::move(model), so, metrics);
  m->owned_encoder->start();
  m->encoder = m->owned_encoder.get();
  m->names = cfg.served_model_names;
  if (m->names.empty()) {
    m->names.push_back(dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string());
  }
  m->id = m->names.front();
  m->path = ref.path;
  m->version = ref.version.empty() ? digest.substr(0, 16) : ref.version;
  m->sha256 = digest;
  m->chat = Unsupported("an embedding model has no chat template");
  log(LogLevel::Info, "encoder model ready",
      {{"model", m->id},
       {"version", m->version},
       {"layers", std::to_string(c.n_layer)},
       {"dimensions", std::to_string(c.n_embd)},
       {"max_tokens", std::to_string(c.n_positions)},
       {"pooling", pooling_name(pooling)},
       {"normalize", normalize ? "yes" : "no"},
       {"seconds", std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count())}});
  return m;
}

}  // namespace stride::cli
