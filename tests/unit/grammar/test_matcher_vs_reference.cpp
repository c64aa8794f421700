// The fast matcher (bytes, hash-consed stacks, lazily built transitions)
// against plain backtracking over the parsed grammar, on random grammars:
// prefix acceptance, completeness, and token masks over a random vocabulary
// whose tokens include cut UTF-8 characters.
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_states.h"
#include "grammar/reference_matcher.h"
#include "random_grammar.h"

namespace stride::grammar {
namespace {

using testing::alphabet;
using testing::probes;
using testing::RandomGrammar;

struct Case {
  std::string text;
  GrammarAst ast;
  std::shared_ptr<const CompiledGrammar> compiled;
};

// Random grammars that compile (those refused as unproductive are skipped).
std::vector<Case> random_cases(uint64_t seed, int want) {
  RandomGrammar gen(seed);
  std::vector<Case> out;
  for (int tries = 0; (int)out.size() < want && tries < want * 20; ++tries) {
    Case c;
    c.text = gen.make(1 + gen.pick(3));
    auto ast = parse_gbnf(c.text);
    EXPECT_TRUE(ast.ok()) << ast.status().message() << "\n" << c.text;
    if (!ast.ok()) continue;
    auto g = compile_grammar(*ast);
    if (!g.ok()) {
      EXPECT_NE(g.status().message().find("can never finish"), std::string::npos) << g.status().message();
      continue;
    }
    c.ast = std::move(*ast);
    c.compiled = *g;
    out.push_back(std::move(c));
  }
  EXPECT_EQ((int)out.size(), want);
  return out;
}

// The reference is exponential on ambiguous grammars: answers it cannot give
// within this many steps are left out (and counted).
constexpr uint64_t kReferenceSteps = 200000;

TEST(MatcherVsReference, PrefixAndCompleteOnRandomGrammars) {
  int checked = 0, accepted = 0, complete = 0, undecided = 0;
  for (const Case& c : random_cases(1234, 300)) {
    RandomGrammar gen(checked + 7);
    const ReferenceMatcher ref(c.ast);
    GrammarStates states(c.compiled);
    for (const std::string& s : probes(gen, c.ast)) {
      uint32_t st = states.initial();
      for (char ch : s) st = states.advance(st, (uint8_t)ch);
      const bool fast_prefix = st != GrammarStates::kDead;
      const bool fast_complete = states.accepting(st);
      const std::optional<bool> ref_prefix = ref.accepts_prefix_within(s, kReferenceSteps);
      const std::optional<bool> ref_complete = ref.accepts_within(s, kReferenceSteps);
      if (!ref_prefix || !ref_complete) {
        ++undecided;
        continue;
      }
      ASSERT_EQ(fast_prefix, *ref_prefix) << c.text << "input: '" << s << "'";
      ASSERT_EQ(fast_complete, *ref_complete) << c.text << "input: '" << s << "'";
      ++checked;
      accepted += fast_prefix;
      complete += fast_complete;
    }
  }
  // Nearly every probe is decided, and the probes exercise both answers.
  EXPECT_LT(undecided, checked / 20) << checked;
  EXPECT_GT(accepted, checked / 4);
  EXPECT_GT(complete, checked / 20);
  EXPECT_LT(accepted, checked);
}

TEST(MatcherVsReference, TokenMasksOnRandomGrammars) {
  RandomGrammar vocab_gen(99);
  // Tokens: 1-3 characters, some cut inside a character, some single bytes.
  std::vector<std::string> pieces = {""};  // id 0: a control token (never allowed)
  for (const std::string& c : alphabet()) {
    pieces.push_back(c);
    for (size_t n = 1; n < c.size(); ++n) pieces.push_back(c.substr(0, n));  // a cut character
    if (c.size() > 1) pieces.push_back(c.substr(1));                          // a tail alone
  }
  for (int k = 0; k < 60; ++k) {
    std::string p;
    for (int n = 1 + vocab_gen.pick(3); n > 0; --n) p += alphabet()[(size_t)vocab_gen.pick(6)];
    if (vocab_gen.pick(4) == 0) p.pop_back();
    if (p.empty()) p = "a";
    pieces.push_back(p);
  }
  pieces.push_back("x");  // the end token's own text is never matched
  const int32_t end_id = (int32_t)pieces.size() - 1;
  auto trie = std::make_shared<const TokenTrie>(pieces, std::vector<int32_t>{end_id});

  int masks = 0, allowed_total = 0, undecided = 0;
  for (const Case& c : random_cases(777, 60)) {
    RandomGrammar gen(masks + 3);
    const ReferenceMatcher ref(c.ast);
    for (const std::string& prefix : probes(gen, c.ast)) {
      if (ref.accepts_prefix_within(prefix, kReferenceSteps) != std::optional<bool>(true)) continue;
      GrammarMatcher m(c.compiled, trie);
      ASSERT_TRUE(m.accept_bytes(prefix));
      const std::vector<uint64_t> mask = m.allowed_tokens();
      for (int32_t t = 0; t < (int32_t)pieces.size(); ++t) {
        const bool fast = (mask[(size_t)t >> 6] >> (t & 63)) & 1;
        std::optional<bool> want;
        if (t == end_id) {
          want = ref.accepts_within(prefix, kReferenceSteps / 10);
        } else {
          want = pieces[(size_t)t].empty() ? std::optional<bool>(false)
                                           : ref.accepts_prefix_within(prefix + pieces[(size_t)t], kReferenceSteps / 10);
        }
        if (!want) {
          ++undecided;
          continue;
        }
        ASSERT_EQ(fast, *want) << c.text << "prefix: '" << prefix << "' token: '" << pieces[(size_t)t] << "'";
        allowed_total += fast;
      }
      ++masks;
    }
  }
  EXPECT_GT(masks, 300);
  EXPECT_LT(undecided, masks * (int)pieces.size() / 20);
  EXPECT_GT(allowed_total, masks);  // masks are not all empty
}

TEST(MatcherVsReference, AcceptTokenFollowsMask) {
  auto g = compile_gbnf("root ::= \"{\" [0-9]+ \"}\"");
  ASSERT_TRUE(g.ok());
  auto trie = std::make_shared<const TokenTrie>(std::vector<std::string>{"{", "1", "23", "}", "{1", "a", ""},
                                                std::vector<int32_t>{6});
  GrammarMatcher m(*g, trie);
  EXPECT_FALSE(m.allowed(1));
  EXPECT_TRUE(m.allowed(4));
  EXPECT_FALSE(m.accept_token(6));  // the end is not allowed yet
  EXPECT_TRUE(m.accept_token(4));
  EXPECT_FALSE(m.accept_token(5));
  EXPECT_TRUE(m.accept_token(2));
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(m.accept_token(3));
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.can_continue());
  EXPECT_TRUE(m.allowed(6));
  EXPECT_FALSE(m.allowed(1));
  EXPECT_TRUE(m.accept_token(6));
  EXPECT_TRUE(m.ended());
}

TEST(MatcherVsReference, CompactKeepsTheLanguage) {
  auto g = compile_gbnf("root ::= ( \"[\" root \"]\" )* \"x\"");
  ASSERT_TRUE(g.ok());
  GrammarStates states(*g);
  uint32_t s = states.initial();
  for (char c : std::string("[[[")) s = states.advance(s, (uint8_t)c);
  s = states.compact(s);
  for (char c : std::string("x]x]x]")) s = states.advance(s, (uint8_t)c);
  EXPECT_FALSE(states.accepting(s));
  s = states.advance(s, 'x');
  EXPECT_TRUE(states.accepting(s));
}


// 2^30 parse stacks before the first byte: refused by the work limit, quickly.
TEST(MatcherVsReference, AmbiguityIsBounded) {
  std::string text = "root ::= r0\n";
  for (int i = 0; i < 30; ++i) {
    text += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"x\" | r" + std::to_string(i + 1) + " \"y\"\n";
  }
  text += "r30 ::= \"z\"\n";
  auto g = compile_gbnf(text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  GrammarStates limited(*g, GrammarMatcher::kMaxWorkPerToken);
  EXPECT_TRUE(limited.exhausted());
  EXPECT_FALSE(limited.can_continue(limited.initial()));
  // A modest depth is fine.
  auto small = compile_gbnf("root ::= r0\nr0 ::= r1 \"x\" | r1 \"y\"\nr1 ::= \"z\"");
  ASSERT_TRUE(small.ok());
  GrammarStates ok(*small, GrammarMatcher::kMaxWorkPerToken);
  EXPECT_FALSE(ok.exhausted());
  uint32_t s = ok.initial();
  for (char c : std::string("zy")) s = ok.advance(s, (uint8_t)c);
  EXPECT_TRUE(ok.accepting(s));
}


// mask_logits (word at a time) sets -inf exactly where allowed() is false,
// including ids beyond the tokenizer's vocabulary.
TEST(MatcherVsReference, MaskLogitsFollowsTheMask) {
  std::vector<std::string> pieces;
  for (int i = 0; i < 300; ++i) pieces.push_back(i % 3 == 0 ? "a" + std::to_string(i) : std::to_string(i));
  auto trie = std::make_shared<const TokenTrie>(pieces, std::vector<int32_t>{});
  for (const char* text : {"root ::= [0-9]+", "root ::= \"a\" [0-9]*", "root ::= [13579] [0-9]?", "root ::= .+"}) {
    auto g = compile_gbnf(text);
    ASSERT_TRUE(g.ok());
    GrammarMatcher m(*g, trie);
    std::vector<float> logits(320, 0.0f);
    m.mask_logits(logits.data(), (int)logits.size());
    for (int t = 0; t < (int)logits.size(); ++t) {
      const bool allowed = t < 300 && m.allowed(t);
      ASSERT_EQ(logits[(size_t)t] == 0.0f, allowed) << text << " token " << t;
    }
  }
}

}  // namespace
}  // namespace stride::grammar
