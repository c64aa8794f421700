// POST /v1/embeddings bodies and WordPiece tokenization. The first byte
// picks the mode: even, the rest is text for the WordPiece tokenizer (a small
// vocabulary with pieces of every script the normalizer touches); odd, the
// rest is a request body parsed with that tokenizer, as the server does.
// Nothing may throw or crash; ids stay in the vocabulary, [CLS] first and
// [SEP] last; an accepted request fits every limit.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "http/embeddings_request.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace {

using namespace stride;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_embeddings: %s\n", what.c_str());
  std::abort();
}

const WordPieceTokenizer& tokenizer() {
  static const std::unique_ptr<WordPieceTokenizer> tok = [] {
    nlohmann::json vocab = nlohmann::json::object();
    int id = 0;
    for (const char* p : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "ab", "##a", "##b", "##ab", "e", "##e", "i",
                          "##i", "cafe", "中", "文", "!", "?", ".", "$", "x", "##x", "\xce\xb1", "##\xce\xb1"}) {
      vocab[p] = id++;
    }
    const nlohmann::json j = {{"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}}},
                              {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
                              {"model", {{"type", "WordPiece"}, {"vocab", vocab}, {"max_input_chars_per_word", 16}}}};
    auto t = WordPieceTokenizer::from_json_text(j.dump());
    if (!t.ok()) fail("fixture: " + t.status().message());
    return std::move(*t);
  }();
  return *tok;
}

void check_ids(const std::vector<int32_t>& ids, const WordPieceTokenizer& tok) {
  if (ids.size() < 2 || ids.front() != tok.cls_id() || ids.back() != tok.sep_id()) fail("not [CLS] ... [SEP]");
  for (int32_t id : ids)
    if (id < 0 || id >= tok.n_vocab()) fail("an id outside the vocabulary");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const WordPieceTokenizer& tok = tokenizer();
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 1) == 0) {
    check_ids(tok.encode(rest), tok);
    return 0;
  }
  const auto body = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  server::EmbeddingsContext ctx;
  ctx.model_id = "fuzz-model";
  ctx.encode = [&tok](const std::string& text) { return tok.encode(text); };
  ctx.n_vocab = tok.n_vocab();
  ctx.n_embd = 8;
  ctx.max_input_tokens = 64;
  ctx.max_inputs = 16;
  ctx.max_total_tokens = 256;
  server::EmbeddingsCall call;
  const server::ApiError err = server::parse_embeddings(body, ctx, call);
  if (!err.ok()) {
    if (err.status < 400 || err.status > 599) fail("an error with a non-error HTTP status");
    return 0;
  }
  if (call.inputs.empty() || (int)call.inputs.size() > ctx.max_inputs) fail("input count outside [1, max_inputs]");
  int64_t total = 0;
  for (const auto& ids : call.inputs) {
    if (ids.empty() || (int64_t)ids.size() > ctx.max_input_tokens) fail("an input outside [1, max_input_tokens]");
    for (int32_t id : ids)
      if (id < 0 || id >= ctx.n_vocab) fail("accepted a token id outside the vocabulary");
    total += (int64_t)ids.size();
  }
  if (total > ctx.max_total_tokens) fail("accepted more tokens than max_total_tokens");
  (void)server::embeddings_json({std::vector<float>(8, 0.5f)}, call.base64, ctx.model_id, (int)total);
  return 0;
}
