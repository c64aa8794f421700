#include "kv/kv_config.h"

namespace stride {

std::string kv_salt_text(const KvManagerConfig& cfg) {
  std::string salt = cfg.cache_salt;
  salt += "|page=";
  salt += std::to_string(cfg.page_size);
  salt += "|";
  salt += kv_storage_name(cfg.storage);
  for (const PolicySpec& p : cfg.layer_policies) {
    salt += "|";
    salt += policy_to_string(p);
  }
  return salt;
}

std::string kv_identity_text(const KvManagerConfig& cfg) {
  return kv_salt_text(cfg) + "|layers=" + std::to_string(cfg.n_layer) + "|kv_heads=" + std::to_string(cfg.n_kv_heads) +
         "|dk=" + std::to_string(cfg.head_dim_k) + "|dv=" + std::to_string(cfg.head_dim_v);
}

}  // namespace stride
