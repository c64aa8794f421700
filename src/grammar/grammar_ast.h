#pragma once
// A parsed grammar (the GBNF dialect of docs/serving.md, "Structured
// output"): named rules whose bodies are trees of literals, character
// classes, rule references, sequences, choices and bounded repeats. Character
// classes are sets of Unicode code points; literals are UTF-8 bytes. Both
// matchers read this: the reference one directly, the fast one after
// compile_grammar() lowers it to bytes.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace stride::grammar {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

struct CodepointRange {
  uint32_t lo = 0, hi = 0;  // inclusive
};

// Sorted, disjoint, non-adjacent ranges; surrogates (U+D800-DFFF) never appear.
using CodepointSet = std::vector<CodepointRange>;
CodepointSet normalize(CodepointSet s);
CodepointSet complement(const CodepointSet& s);
bool contains(const CodepointSet& s, uint32_t cp);

struct GrammarNode {
  enum class Kind { Literal, CharClass, RuleRef, Sequence, Choice, Repeat };
  Kind kind = Kind::Sequence;
  std::string bytes;                  // Literal: UTF-8 bytes (may be empty)
  CodepointSet chars;                 // CharClass: never empty
  std::string rule;                   // RuleRef: the rule's name
  std::vector<GrammarNode> children;  // Sequence, Choice; Repeat: exactly one
  int min = 0, max = -1;              // Repeat: bounds; max -1 is unbounded
};

struct GrammarAst {
  std::vector<std::string> names;    // rule names in definition order
  std::vector<GrammarNode> bodies;   // [names.size()]
  std::unordered_map<std::string, size_t> index;
  const GrammarNode* find(const std::string& name) const {
    auto it = index.find(name);
    return it == index.end() ? nullptr : &bodies[it->second];
  }
};

}  // namespace stride::grammar
