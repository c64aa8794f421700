#pragma once
// Random grammars and sentences for the fast-vs-reference tests: GBNF text
// over a small alphabet with 1- to 4-byte UTF-8 characters, without left
// recursion (a rule refers back only after a non-empty literal).
#include <random>
#include <set>
#include <string>
#include <vector>

#include "grammar/grammar_ast.h"

namespace stride::grammar::testing {

// a, b, c, é (2 bytes), € (3 bytes), 𝄞 (4 bytes)
inline const std::vector<std::string>& alphabet() {
  static const std::vector<std::string> a = {"a", "b", "c", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9D\x84\x9E"};
  return a;
}

class RandomGrammar {
 public:
  explicit RandomGrammar(uint64_t seed) : rng_(seed) {}

  std::string make(int n_rules) {
    std::string text;
    for (int r = 0; r < n_rules; ++r) {
      text += (r == 0 ? std::string("root") : "r" + std::to_string(r)) + " ::= ";
      text += choice(r, n_rules, 0) + "\n";
    }
    return text;
  }

  // A random sentence of `ast` (false when the derivation ran too deep).
  bool sentence(const GrammarAst& ast, std::string& out) {
    budget_ = 200;
    return derive(ast, *ast.find("root"), out, 0);
  }

  std::mt19937_64& rng() { return rng_; }
  int pick(int n) { return (int)(rng_() % (uint64_t)n); }

 private:
  std::string name(int r) { return r == 0 ? "root" : "r" + std::to_string(r); }

  std::string choice(int r, int n_rules, int depth) {
    const int n = 1 + pick(depth == 0 ? 3 : 2);
    std::string s;
    for (int k = 0; k < n; ++k) s += (k ? " | " : "") + sequence(r, n_rules, depth);
    return s;
  }

  std::string sequence(int r, int n_rules, int depth) {
    const int n = 1 + pick(depth == 0 ? 3 : 2);
    std::string s;
    bool after_literal = false;
    for (int k = 0; k < n; ++k) {
      std::string item = primary(r, n_rules, depth, after_literal);
      const std::string post = postfix();
      // A literal that must appear (not under ? * {0,n}) makes what follows non-left.
      const bool required = post.empty() || post == "+" || post == "{2}" || post == "{1,}";
      after_literal = after_literal || (item.size() > 2 && item[0] == '"' && required);
      s += (k ? " " : "") + item + post;
    }
    return s;
  }

  std::string primary(int r, int n_rules, int depth, bool after_literal) {
    switch (pick(depth < 1 ? 5 : 4)) {
      case 0: {
        std::string lit = "\"";
        for (int k = 0, n = 1 + pick(2); k < n; ++k) lit += alphabet()[(size_t)pick(6)];
        return lit + "\"";
      }
      case 1: {
        static const char* kClasses[] = {"[a-c]", "[^a]", "[ab\\u00e9]", ".", "[\\u00e9-\\U0001D11E]", "[b]", "[^\\u20AC]"};
        return kClasses[pick(7)];
      }
      case 2:
      case 3: {
        // Forward references anywhere; back references only after a literal.
        const bool back = after_literal && pick(2) == 0;
        if (back) return name(pick(r + 1));
        if (r + 1 < n_rules) return name(r + 1 + pick(n_rules - r - 1));
        return "\"" + alphabet()[(size_t)pick(6)] + "\"";
      }
      default:
        return "( " + choice(r, n_rules, depth + 1) + " )";
    }
  }

  std::string postfix() {
    switch (pick(9)) {
      case 0: return "*";
      case 1: return "+";
      case 2: return "?";
      case 3: return "{2}";
      case 4: return "{0,2}";
      case 5: return "{1,}";
      default: return "";
    }
  }

  bool derive(const GrammarAst& ast, const GrammarNode& n, std::string& out, int depth) {
    if (--budget_ < 0 || depth > 40) return false;
    using K = GrammarNode::Kind;
    switch (n.kind) {
      case K::Literal: out += n.bytes; return true;
      case K::CharClass: {
        const CodepointRange& r = n.chars[(size_t)pick((int)n.chars.size())];
        // Mostly characters of the alphabet when the class has them.
        for (int tries = 0; tries < 8; ++tries) {
          const std::string& c = alphabet()[(size_t)pick(6)];
          if (contains(n.chars, decode(c))) {
            out += c;
            return true;
          }
        }
        std::string enc;
        append(r.lo + (uint32_t)(rng_() % (uint64_t)(r.hi - r.lo + 1)), enc);
        if (!contains(n.chars, decode(enc))) return false;
        out += enc;
        return true;
      }
      case K::RuleRef: return derive(ast, *ast.find(n.rule), out, depth + 1);
      case K::Sequence:
        for (const GrammarNode& c : n.children)
          if (!derive(ast, c, out, depth + 1)) return false;
        return true;
      case K::Choice: return derive(ast, n.children[(size_t)pick((int)n.children.size())], out, depth + 1);
      case K::Repeat: {
        const int hi = n.max < 0 ? n.min + 2 : n.max;
        const int times = n.min + pick(hi - n.min + 1);
        for (int k = 0; k < times; ++k)
          if (!derive(ast, n.children[0], out, depth + 1)) return false;
        return true;
      }
    }
    return false;
  }

  static uint32_t decode(const std::string& c) {
    const unsigned char b0 = (unsigned char)c[0];
    if (c.size() == 1) return b0;
    uint32_t cp = c.size() == 2 ? (b0 & 0x1F) : c.size() == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (size_t k = 1; k < c.size(); ++k) cp = (cp << 6) | ((unsigned char)c[k] & 0x3F);
    return cp;
  }
  static void append(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += (char)cp;
    } else if (cp < 0x800) {
      out += (char)(0xC0 | (cp >> 6));
      out += (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += (char)(0xE0 | (cp >> 12));
      out += (char)(0x80 | ((cp >> 6) & 0x3F));
      out += (char)(0x80 | (cp & 0x3F));
    } else {
      out += (char)(0xF0 | (cp >> 18));
      out += (char)(0x80 | ((cp >> 12) & 0x3F));
      out += (char)(0x80 | ((cp >> 6) & 0x3F));
      out += (char)(0x80 | (cp & 0x3F));
    }
  }

  std::mt19937_64 rng_;
  int budget_ = 0;
};

// Strings to try: prefixes of sentences (every byte cut), sentences with a
// byte changed, and random strings over the alphabet.
inline std::vector<std::string> probes(RandomGrammar& gen, const GrammarAst& ast) {
  std::set<std::string> out{""};
  for (int k = 0; k < 6; ++k) {
    std::string s;
    if (!gen.sentence(ast, s) || s.size() > 16) continue;
    for (size_t n = 0; n <= s.size(); ++n) out.insert(s.substr(0, n));
    if (!s.empty()) {
      std::string bad = s;
      bad[(size_t)gen.pick((int)s.size())] = alphabet()[(size_t)gen.pick(6)][0];
      out.insert(bad);
    }
  }
  for (int k = 0; k < 10; ++k) {
    std::string s;
    for (int n = gen.pick(5); n > 0; --n) s += alphabet()[(size_t)gen.pick(6)];
    if (!s.empty() && gen.pick(3) == 0) s.pop_back();  // cut the last character
    out.insert(s);
  }
  return {out.begin(), out.end()};
}

}  // namespace stride::grammar::testing
