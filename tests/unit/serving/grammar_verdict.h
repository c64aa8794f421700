#pragma once
// Runs a GBNF grammar over a text byte by byte: whether the text is a prefix
// of some sentence of the grammar, and whether it is a whole one.
#include <gtest/gtest.h>

#include <string>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_states.h"

namespace stride::serving {

struct Verdict {
  bool prefix = false, complete = false;
};

inline Verdict run(const std::string& gbnf, const std::string& s) {
  auto g = grammar::compile_gbnf(gbnf, {8u << 20});
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return {};
  grammar::GrammarStates states(*g);
  uint32_t st = states.initial();
  for (unsigned char b : s) {
    st = states.advance(st, b);
    if (st == grammar::GrammarStates::kDead) return {};
  }
  return {true, states.accepting(st)};
}

}  // namespace stride::serving
