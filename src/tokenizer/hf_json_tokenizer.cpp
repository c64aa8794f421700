// Tokenizer::from_hf_folder: a BPE tokenizer from a Hugging Face folder's
// tokenizer.json (vocabulary, merges, added tokens, post-processor BOS), with
// end-of-generation ids from tokenizer_config.json / generation_config.json /
// config.json and llama.cpp's detection by text on top.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "loader/json_file.h"
#include "tokenizer/hf_json_pipeline.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_tokenizer.h"

namespace stride {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Ids beyond this are not a vocabulary but a hostile or broken file.
constexpr int64_t kMaxVocab = int64_t{1} << 24;

Expected<int32_t> read_id(const json& v, const std::string& what) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxVocab) {
    return Corrupt("tokenizer.json: " + what + " has a bad id");
  }
  return static_cast<int32_t>(v.get<int64_t>());
}

bool is_byte_token(const std::string& t) {
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(t[3])) && std::isxdigit(static_cast<unsigned char>(t[4]));
}

// "content" of an AddedToken-like value (a string or {"content": ...}).
std::string token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

Status read_tokens(const json& root, bool byte_level, Vocab* v) {
  const json& vocab = root["model"].value("vocab", json());
  if (!vocab.is_object()) return Corrupt("tokenizer.json: model.vocab is not an object");
  const json& added = root.value("added_tokens", json::array());
  if (!added.is_array()) return Corrupt("tokenizer.json: added_tokens is not a list");
  int32_t n = 0;
  std::vector<std::pair<int32_t, std::string>> normal;
  normal.reserve(vocab.size());
  for (const auto& [text, idv] : vocab.items()) {
    STRIDE_ASSIGN_OR_RETURN(int32_t id, read_id(idv, "model.vocab['" + text + "']"));
    normal.emplace_back(id, text);
    n = std::max(n, id + 1);
  }
  for (const json& a : added) {
    if (!a.is_object() || !a.contains("id")) return Corrupt("tokenizer.json: bad added_tokens entry");
    STRIDE_ASSIGN_OR_RETURN(int32_t id, read_id(a["id"], "an added token"));
    n = std::max(n, id + 1);
  }
  if (n == 0) return Corrupt("tokenizer.json: empty vocabulary");
  v->text.assign(n, "");
  v->attr.assign(n, kAttrUnused);
  v->score.assign(n, 0.0f);
  for (auto& [id, text] : normal) {
    v->attr[id] = !byte_level && is_byte_token(text) ? kAttrByte : kAttrNormal;
    v->text[id] = std::move(text);
  }
  for (const json& a : added) {
    const int32_t id = static_cast<int32_t>(a["id"].get<int64_t>());
    const std::string content = token_text(a);
    if (content.empty()) return Corrupt("tokenizer.json: added token " + std::to_string(id) + " has no content");
    v->text[id] = content;
    const bool special = a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>();
    v->attr[id] = special ? kAttrControl : kAttrUserDefined;
  }
  v->token_to_id.reserve(n);
  for (int32_t id = 0; id < n; ++id) {
    if (v->text[id].empty()) v->text[id] = "[EMPTY_" + std::to_string(id) + "]";
    v->token_to_id[v->text[id]] = id;
  }
  return Status::Ok();
}

Status read_merges(const json& model, Vocab* v) {
  const json& merges = model.value("merges", json::array());
  if (!merges.is_array()) return Corrupt("tokenizer.json: model.merges is not a list");
  v->merge_rank.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    const auto rank = static_cast<int32_t>(i);
    if (m.is_string()) {  // "left right"
      const std::string& s = m.get_ref<const std::string&>();
      const size_t sp = s.find(' ', 1);
      if (sp == std::string::npos) return Corrupt("tokenizer.json: merge '" + s + "' has no space");
      v->add_merge(std::string_view(s).substr(0, sp), std::string_view(s).substr(sp + 1), rank);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      v->add_merge(m[0].get_ref<const std::string&>(), m[1].get_ref<const std::string&>(), rank);
    } else {
      return Corrupt("tokenizer.json: merge " + std::to_string(i) + " is neither \"a b\" nor [a, b]");
    }
  }
  return Status::Ok();
}

// The BOS a TemplateProcessing post-processor puts before the text, or -1.
int32_t template_bos(const json& post, const Vocab& v) {
  if (!post.is_object()) return -1;
  const std::string type = post.contains("type") && post["type"].is_string() ? post["type"].get<std::string>() : "";
  if (type == "Sequence" && post.contains("processors") && post["processors"].is_array()) {
    for (const json& p : post["processors"]) {
      const int32_t id = template_bos(p, v);
      if (id >= 0) return id;
    }
    return -1;
  }
  if (type != "TemplateProcessing" || !post.contains("single") || !post["single"].is_array()) return -1;
  for (const json& piece : post["single"]) {
    if (piece.contains("Sequence")) return -1;  // the text comes first
    if (piece.contains("SpecialToken") && piece["SpecialToken"].is_object()) {
      return v.find(token_text(piece["SpecialToken"].value("id", json())));
    }
  }
  return -1;
}

// eos_token_id of a config file: an id or a list of ids.
void add_eos_ids(const json& cfg, Vocab* v) {
  const json& e = cfg.value("eos_token_id", json());
  const auto add = [&](const json& x) {
    if (x.is_number_integer() && v->valid_id(static_cast<int32_t>(x.get<int64_t>()))) {
      const auto id = static_cast<int32_t>(x.get<int64_t>());
      if (v->eos < 0) v->eos = id;
      v->eog.insert(id);
    }
  };
  if (e.is_array()) {
    for (const json& x : e) add(x);
  } else {
    add(e);
  }
}

json optional_json(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return json::object();
  auto j = read_json_file(p.string());
  return j.ok() && j->is_object() ? std::move(*j) : json::object();
}

Expected<std::unique_ptr<Tokenizer>> load_hf_folder(const std::string& dir) {
  const fs::path root_dir(dir);
  STRIDE_ASSIGN_OR_RETURN(json root, read_json_file((root_dir / "tokenizer.json").string()));
  if (!root.is_object()) return Corrupt("tokenizer.json is not an object");
  STRIDE_ASSIGN_OR_RETURN(PreTokenizerSpec spec, spec_from_tokenizer_json(root));

  Vocab v;
  v.type = VocabType::kBpe;
  v.pre = "tokenizer.json";
  STRIDE_RETURN_IF_ERROR(read_tokens(root, spec.byte_level, &v));
  STRIDE_RETURN_IF_ERROR(read_merges(root["model"], &v));
  v.unk = v.find(token_text(root["model"].value("unk_token", json())));

  const json tok_cfg = optional_json(root_dir / "tokenizer_config.json");
  v.bos = template_bos(root.value("post_processor", json()), v);
  v.add_bos = v.bos >= 0;
  if (v.bos < 0) v.bos = v.find(token_text(tok_cfg.value("bos_token", json())));
  v.eos = v.find(token_text(tok_cfg.value("eos_token", json())));
  if (v.eos >= 0) v.eog.insert(v.eos);
  add_eos_ids(optional_json(root_dir / "generation_config.json"), &v);
  add_eos_ids(optional_json(root_dir / "config.json"), &v);
  // In a tokenizer.json only added_tokens are cut out of text: detection by
  // text may add end-of-generation ids, but a vocabulary token such as "</s>"
  // stays an ordinary one.
  const std::vector<uint32_t> attr_before = v.attr;
  detect_special_tokens(&v, FimTokenIds{});
  for (size_t id = 0; id < v.attr.size(); ++id) {
    if (!(attr_before[id] & (kAttrControl | kAttrUserDefined))) v.attr[id] = attr_before[id];
  }
  order_special_tokens(&v);

  STRIDE_ASSIGN_OR_RETURN(auto bpe, BpeTokenizer::create(std::move(v), std::move(spec)));
  return std::unique_ptr<Tokenizer>(std::move(bpe));
}

}  // namespace

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_hf_folder(const std::string& dir) {
  try {
    return load_hf_folder(dir);
  } catch (const nlohmann::json::exception& e) {  // a value of the wrong type somewhere
    return Corrupt(dir + "/tokenizer.json: " + e.what());
  }
}

}  // namespace stride
