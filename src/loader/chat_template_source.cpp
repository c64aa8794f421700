#include "loader/chat_template_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "loader/gguf_file.h"
#include "loader/json_file.h"
#include "loader/model_source.h"

namespace stride {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::uintmax_t kMaxTemplateBytes = 1u << 20;  // the largest real ones are ~20 KB

Expected<std::string> read_text(const fs::path& p) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(p, ec);
  if (ec) return IoError("cannot read " + p.string() + ": " + ec.message());
  if (size > kMaxTemplateBytes) return Corrupt(p.string() + " is larger than 1 MiB");
  std::ifstream f(p, std::ios::binary);
  if (!f) return IoError("cannot read " + p.string());
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

Expected<std::string> from_tokenizer_config(const fs::path& p) {
  STRIDE_ASSIGN_OR_RETURN(json j, read_json_file(p.string()));
  const auto it = j.find("chat_template");
  if (!j.is_object() || it == j.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array() || it->empty()) {
    return Corrupt(p.string() + ": chat_template must be a string or a non-empty list of {name, template}");
  }
  const json* chosen = nullptr;
  for (const json& e : *it) {
    if (!e.is_object() || !e.contains("template") || !e["template"].is_string()) {
      return Corrupt(p.string() + ": every chat_template entry needs a string 'template'");
    }
    if (!chosen || (e.contains("name") && e["name"] == "default")) chosen = &e;
    if (e.contains("name") && e["name"] == "default") break;
  }
  return (*chosen)["template"].get<std::string>();
}

}  // namespace

Expected<std::string> model_chat_template(const ModelSource& src) {
  if (const GGUFFile* gguf = src.gguf()) return gguf->get_string_or("tokenizer.chat_template", "");
  std::error_code ec;
  const fs::path dir(src.path);
  if (!fs::is_directory(dir, ec)) return std::string();
  if (fs::exists(dir / "chat_template.jinja", ec)) return read_text(dir / "chat_template.jinja");
  if (fs::exists(dir / "tokenizer_config.json", ec)) return from_tokenizer_config(dir / "tokenizer_config.json");
  return std::string();
}

}  // namespace stride
