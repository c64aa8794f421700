#pragma once
// The slow, obviously correct matcher the fast one is tested against: plain
// backtracking over the parsed grammar tree (before any lowering), one
// continuation per sub-match. Exponential in bad cases; for tests on short
// strings only. Needs a grammar without left recursion whose rules can all
// finish (what compile_grammar() accepts).
#include <cstdint>
#include <optional>
#include <string_view>

#include "grammar/grammar_ast.h"

namespace stride::grammar {

class ReferenceMatcher {
 public:
  explicit ReferenceMatcher(const GrammarAst& ast) : ast_(ast) {}
  // The whole of `s` is a sentence of the grammar.
  bool accepts(std::string_view s) const;
  // Some sentence of the grammar starts with `s` (bytes; `s` may end inside a character).
  bool accepts_prefix(std::string_view s) const;
  // The same answers within at most `max_steps` matching steps; nullopt when
  // the search needs more (highly ambiguous grammars are exponential here).
  std::optional<bool> accepts_within(std::string_view s, uint64_t max_steps) const;
  std::optional<bool> accepts_prefix_within(std::string_view s, uint64_t max_steps) const;

 private:
  const GrammarAst& ast_;
};

}  // namespace stride::grammar
