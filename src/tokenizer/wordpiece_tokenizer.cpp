#include "tokenizer/wordpiece_tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/utf8.h"

namespace stride {

namespace {

using json = nlohmann::json;

std::string to_utf8(const std::u32string& s, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) utf8::append(out, (uint32_t)s[i]);
  return out;
}

// Reads the BertNormalizer's switches; strip_accents null follows lowercase.
Status read_normalizer(const json& n, BertNormalizerOptions& o) {
  if (n.is_null()) {
    o = {false, false, false, false};
    return Status::Ok();
  }
  if (!n.is_object() || n.value("type", "") != "BertNormalizer") {
    return Unsupported("tokenizer.json: only the BertNormalizer is supported for WordPiece");
  }
  auto flag = [&](const char* key, bool def) {
    auto it = n.find(key);
    return it != n.end() && it->is_boolean() ? it->get<bool>() : def;
  };
  o.clean_text = flag("clean_text", true);
  o.handle_chinese_chars = flag("handle_chinese_chars", true);
  o.lowercase = flag("lowercase", true);
  o.strip_accents = flag("strip_accents", o.lowercase);
  return Status::Ok();
}

}  // namespace

Expected<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::from_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto tok = from_json_text(ss.str());
  if (!tok.ok()) return Status(tok.status().code(), tok.status().message() + " [" + path + "]");
  return tok;
}

Expected<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::from_json_text(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Corrupt("tokenizer.json is not a JSON object");
  auto model = j.find("model");
  if (model == j.end() || !model->is_object() || model->value("type", "") != "WordPiece") {
    return Unsupported("tokenizer.json: the model is not WordPiece");
  }
  auto vocab = model->find("vocab");
  if (vocab == model->end() || !vocab->is_object() || vocab->empty() || vocab->size() > (1u << 24)) {
    return Corrupt("tokenizer.json: model.vocab must be a non-empty object");
  }
  std::unique_ptr<WordPieceTokenizer> t(new WordPieceTokenizer());
  t->pieces_.resize(vocab->size());
  std::vector<bool> seen(vocab->size(), false);
  for (const auto& [piece, id] : vocab->items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= vocab->size() || seen[id.get<size_t>()]) {
      return Corrupt("tokenizer.json: vocabulary ids must be 0..n-1, each once");
    }
    seen[id.get<size_t>()] = true;
    t->pieces_[id.get<size_t>()] = piece;
    t->vocab_[piece] = id.get<int32_t>();
  }
  if (auto p = model->find("continuing_subword_prefix"); p != model->end() && p->is_string()) t->prefix_ = *p;
  if (auto m = model->find("max_input_chars_per_word"); m != model->end() && m->is_number_unsigned()) {
    t->max_word_chars_ = m->get<size_t>();
  }
  const std::string unk = model->value("unk_token", "[UNK]");
  t->unk_ = t->find(unk);
  t->cls_ = t->find("[CLS]");
  t->sep_ = t->find("[SEP]");
  if (t->unk_ < 0 || t->cls_ < 0 || t->sep_ < 0) {
    return Corrupt("tokenizer.json: the vocabulary lacks " + unk + ", [CLS] or [SEP]");
  }
  auto norm = j.find("normalizer");
  STRIDE_RETURN_IF_ERROR(read_normalizer(norm == j.end() ? json() : *norm, t->norm_));
  if (auto pre = j.find("pre_tokenizer");
      pre != j.end() && !pre->is_null() && !(pre->is_object() && pre->value("type", "") == "BertPreTokenizer")) {
    return Unsupported("tokenizer.json: only the BertPreTokenizer is supported for WordPiece");
  }
  return t;
}

int32_t WordPieceTokenizer::find(const std::string& piece) const {
  auto it = vocab_.find(piece);
  return it == vocab_.end() ? -1 : it->second;
}

void WordPieceTokenizer::encode_word(const std::u32string& word, std::vector<int32_t>& out) const {
  if (word.size() > max_word_chars_) {
    out.push_back(unk_);
    return;
  }
  const size_t mark = out.size();
  for (size_t start = 0; start < word.size();) {
    int32_t id = -1;
    size_t end = word.size();
    for (; end > start; --end) {  // longest piece first
      const std::string piece = (start > 0 ? prefix_ : std::string()) + to_utf8(word, start, end);
      id = find(piece);
      if (id >= 0) break;
    }
    if (id < 0) {  // no split: the whole word is unknown
      out.resize(mark);
      out.push_back(unk_);
      return;
    }
    out.push_back(id);
    start = end;
  }
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> ids;
  if (add_special) ids.push_back(cls_);
  for (const std::u32string& word : bert_pre_tokenize(bert_normalize(text, norm_))) encode_word(word, ids);
  if (add_special) ids.push_back(sep_);
  return ids;
}

}  // namespace stride
