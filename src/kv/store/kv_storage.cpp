#include "kv/store/kv_storage.h"

namespace stride {

const char* kv_storage_name(KvStorage s) {
  switch (s) {
    case KvStorage::F16: return "f16";
    case KvStorage::F32: return "f32";
    case KvStorage::Int8: return "int8";
  }
  return "?";
}

Expected<KvStorage> parse_kv_storage(std::string_view text) {
  for (KvStorage s : {KvStorage::F16, KvStorage::F32, KvStorage::Int8})
    if (text == kv_storage_name(s)) return s;
  return InvalidArgument("KV type must be f16, f32 or int8, not '" + std::string(text) + "'");
}

}  // namespace stride
