// Grammars and JSON schemas from the network (the `grammar` field and
// response_format): parsing, converting and compiling return a Status, never
// crash or hang; a compiled grammar then follows the rest of the input as
// tokens of a small vocabulary (whole bytes, multi-byte pieces, cut UTF-8),
// and a token is accepted exactly when the mask allowed it.
//
// Input: byte 0 (bit 0: a JSON schema instead of GBNF; bit 1: strict), the
// grammar or schema text up to a NUL, then token choices, one byte each.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "http/json_fields.h"

namespace {

using namespace stride;

const std::shared_ptr<const grammar::TokenTrie>& trie() {
  static const std::shared_ptr<const grammar::TokenTrie> t = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, (char)b));
    for (const char* p : {"{\"", "\":", "\": ", "true", "null", "\n  ", "\xC3\xA9", "\xE2\x82", "\xAC\"", "ab"}) {
      pieces.push_back(p);
    }
    pieces.push_back("");  // a control token
    pieces.push_back("");  // the end token
    const int32_t end = (int32_t)pieces.size() - 1;
    return std::make_shared<const grammar::TokenTrie>(pieces, std::vector<int32_t>{end});
  }();
  return t;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_grammar: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool schema = data[0] & 1;
  const std::string_view rest((const char*)data + 1, size - 1);
  const size_t cut = rest.find('\0');
  const std::string_view text = rest.substr(0, cut);
  const std::string_view choices = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 1);

  grammar::GrammarLimits limits;
  std::string gbnf(text);
  if (schema) {
    // As the server takes it: nesting checked first, then parsed without exceptions.
    if (server::json_nesting_depth(text, server::kMaxJsonDepth + 1) > server::kMaxJsonDepth) return 0;
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded()) return 0;
    grammar::SchemaOptions opts;
    opts.strict = data[0] & 2;
    opts.property_order = grammar::property_order_of(nlohmann::ordered_json::parse(text, nullptr, false));
    auto converted = grammar::json_schema_to_gbnf(doc, opts);
    if (!converted.ok()) return 0;
    gbnf = std::move(*converted);
    limits.max_text_bytes = 8u << 20;
  }
  auto compiled = grammar::compile_gbnf(gbnf, limits);
  if (!compiled.ok()) return 0;  // also for schemas: {"$ref": "#"} converts but can never finish
  // A lower work limit than the server's: sanitizers run ~10x slower.
  grammar::GrammarMatcher m(*compiled, trie(), 100'000);
  const int n = trie()->n_vocab();
  for (unsigned char c : choices.substr(0, 256)) {
    const int32_t id = (int32_t)((c * 7u) % (unsigned)n);
    const bool allowed = m.allowed(id);
    if (m.exhausted()) return 0;
    if (m.accept_token(id) != allowed) fail("accept_token disagrees with the mask for token " + std::to_string(id));
  }
  return 0;
}
