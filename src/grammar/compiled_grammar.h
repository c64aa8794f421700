#pragma once
// A grammar lowered to bytes for the fast matcher: every rule is a list of
// alternatives, each a run of elements in one flat array ending in End. An
// element is a byte set (one input byte) or a reference to a rule. Choices
// and repeats inside a rule became rules of their own ({m,n}: m copies and a
// chain of optional ones; * and +: a right-recursive rule); a character class
// beyond ASCII became a rule over its UTF-8 byte sequences.
//
// compile_grammar() refuses what the matcher could not run: left recursion
// (a rule that can reach itself before consuming a byte, leaving work behind)
// and rules that can never finish.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_ast.h"

namespace stride::grammar {

enum class ElementKind : uint32_t { End = 0, Bytes = 1, Rule = 2 };

struct CompiledGrammar {
  static constexpr uint32_t kArgBits = 30;
  static uint32_t element(ElementKind k, uint32_t arg) { return ((uint32_t)k << kArgBits) | arg; }
  static ElementKind kind(uint32_t e) { return (ElementKind)(e >> kArgBits); }
  static uint32_t arg(uint32_t e) { return e & ((1u << kArgBits) - 1); }

  std::vector<uint32_t> elements;                  // alternatives back to back, each ending in End
  std::vector<std::array<uint64_t, 4>> byte_sets;  // 256-bit sets
  std::vector<std::vector<uint32_t>> rule_alts;    // per rule: where its alternatives start in `elements`
  std::vector<std::string> rule_names;             // user rules first, then generated ones
  uint32_t root = 0;

  bool byte_in(uint32_t set, uint8_t b) const { return (byte_sets[set][b >> 6] >> (b & 63)) & 1; }
};

Expected<std::shared_ptr<const CompiledGrammar>> compile_grammar(const GrammarAst& ast,
                                                                 const GrammarLimits& limits = {});

// parse_gbnf + compile_grammar.
Expected<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace stride::grammar
