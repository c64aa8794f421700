#pragma once
// The web UI (chat playground and live dashboard) built into the binary from
// the files in web/ (cmake/embed_web.cmake): "/" is index.html, the rest are
// under /ui/. Nothing is fetched from elsewhere at run time.
#include <span>
#include <string_view>

namespace stride::server {

struct WebAsset {
  std::string_view url;           // "/" or "/ui/<file>"
  std::string_view content_type;
  std::string_view body;
};

std::span<const WebAsset> web_assets();
// The asset served at `url`, or null (an exact match: no paths are resolved).
const WebAsset* find_web_asset(std::string_view url);

}  // namespace stride::server
