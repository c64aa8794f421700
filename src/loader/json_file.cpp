#include "loader/json_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace stride {

Expected<nlohmann::json> read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corrupt(std::filesystem::path(path).filename().string() + " is not valid JSON");
  return j;
}

}  // namespace stride
