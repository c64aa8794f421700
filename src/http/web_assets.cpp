#include "http/web_assets.h"

namespace stride::server {

const WebAsset* find_web_asset(std::string_view url) {
  for (const WebAsset& a : web_assets()) {
    if (a.url == url) return &a;
  }
  return nullptr;
}

}  // namespace stride::server
