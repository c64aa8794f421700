#include "grammar/compiled_grammar.h"

#include <map>

#include "grammar/grammar_checks.h"
#include "grammar/utf8_ranges.h"

namespace stride::grammar {

namespace {

using Kind = GrammarNode::Kind;
using ByteSet = std::array<uint64_t, 4>;

class Compiler {
 public:
  Compiler(const GrammarAst& ast, const GrammarLimits& limits) : ast_(ast), limits_(limits) {}

  Expected<std::shared_ptr<const CompiledGrammar>> run() {
    for (const std::string& name : ast_.names) new_rule(name);
    for (size_t r = 0; r < ast_.bodies.size(); ++r) {
      const GrammarNode& body = ast_.bodies[r];
      if (body.kind == Kind::Choice) {
        for (const GrammarNode& alt : body.children) STRIDE_RETURN_IF_ERROR(add_alt((uint32_t)r, alt));
      } else {
        STRIDE_RETURN_IF_ERROR(add_alt((uint32_t)r, body));
      }
    }
    auto g = std::make_unique<CompiledGrammar>();
    g->rule_names = std::move(names_);
    g->byte_sets = std::move(sets_);
    g->root = (uint32_t)ast_.index.at("root");
    g->rule_alts.resize(alts_.size());
    for (size_t r = 0; r < alts_.size(); ++r) {
      for (const std::vector<uint32_t>& alt : alts_[r]) {
        g->rule_alts[r].push_back((uint32_t)g->elements.size());
        g->elements.insert(g->elements.end(), alt.begin(), alt.end());
        g->elements.push_back(CompiledGrammar::element(ElementKind::End, 0));
      }
    }
    STRIDE_RETURN_IF_ERROR(check_productive(*g));
    STRIDE_RETURN_IF_ERROR(check_left_recursion(*g));
    return std::shared_ptr<const CompiledGrammar>(std::move(g));
  }

 private:
  uint32_t new_rule(const std::string& name) {
    names_.push_back(name);
    alts_.emplace_back();
    return (uint32_t)(names_.size() - 1);
  }
  uint32_t derived_rule(uint32_t owner) { return new_rule(names_[owner] + "-" + std::to_string(names_.size())); }

  Status count(size_t n) {
    elements_ += n;
    if (elements_ > limits_.max_elements) {
      return InvalidArgument("grammar: too large once expanded (over " + std::to_string(limits_.max_elements) +
                             " elements; lower the {m,n} bounds)");
    }
    return Status::Ok();
  }

  Status add_alt(uint32_t rule, const GrammarNode& n) {
    std::vector<uint32_t> seq;
    STRIDE_RETURN_IF_ERROR(emit(n, rule, seq));
    STRIDE_RETURN_IF_ERROR(count(seq.size() + 1));
    alts_[rule].push_back(std::move(seq));
    return Status::Ok();
  }

  uint32_t byte_set(const ByteSet& s) {
    auto [it, fresh] = set_index_.emplace(s, (uint32_t)sets_.size());
    if (fresh) sets_.push_back(s);
    return CompiledGrammar::element(ElementKind::Bytes, it->second);
  }
  static ByteSet range_set(uint8_t lo, uint8_t hi) {
    ByteSet s{};
    for (unsigned b = lo; b <= hi; ++b) s[b >> 6] |= 1ull << (b & 63);
    return s;
  }
  static uint32_t rule_element(uint32_t r) { return CompiledGrammar::element(ElementKind::Rule, r); }

  Status emit_class(const CodepointSet& chars, uint32_t owner, std::vector<uint32_t>& seq) {
    std::string key;
    for (const CodepointRange& r : chars) key += std::to_string(r.lo) + "-" + std::to_string(r.hi) + ",";
    if (auto it = class_rules_.find(key); it != class_rules_.end()) {
      seq.push_back(it->second);
      return Status::Ok();
    }
    const std::vector<ByteRangeSeq> seqs = utf8_sequences(chars);
    ByteSet single{};
    bool only_single = true;
    for (const ByteRangeSeq& s : seqs) {
      if (s.size() != 1) {
        only_single = false;
        continue;
      }
      const ByteSet r = range_set(s[0].lo, s[0].hi);
      for (int w = 0; w < 4; ++w) single[(size_t)w] |= r[(size_t)w];
    }
    uint32_t el = 0;
    if (only_single) {
      el = byte_set(single);
    } else {
      const uint32_t r = derived_rule(owner);
      if (single != ByteSet{}) alts_[r].push_back({byte_set(single)});
      for (const ByteRangeSeq& s : seqs) {
        if (s.size() == 1) continue;
        std::vector<uint32_t> alt;
        for (const ByteRange& b : s) alt.push_back(byte_set(range_set(b.lo, b.hi)));
        STRIDE_RETURN_IF_ERROR(count(alt.size() + 1));
        alts_[r].push_back(std::move(alt));
      }
      el = rule_element(r);
    }
    class_rules_[key] = el;
    seq.push_back(el);
    return Status::Ok();
  }

  // The node as one element: itself when it lowers to one, else a new rule.
  Expected<uint32_t> unit(const GrammarNode& n, uint32_t owner) {
    std::vector<uint32_t> seq;
    if (n.kind != Kind::Choice) {
      STRIDE_RETURN_IF_ERROR(emit(n, owner, seq));
      if (seq.size() == 1) return seq[0];
    }
    const uint32_t r = derived_rule(owner);
    if (n.kind == Kind::Choice) {
      for (const GrammarNode& c : n.children) STRIDE_RETURN_IF_ERROR(add_alt(r, c));
    } else {
      STRIDE_RETURN_IF_ERROR(count(seq.size() + 1));
      alts_[r].push_back(std::move(seq));
    }
    return rule_element(r);
  }

  Status emit(const GrammarNode& n, uint32_t owner, std::vector<uint32_t>& seq) {
    switch (n.kind) {
      case Kind::Literal:
        for (unsigned char b : n.bytes) seq.push_back(byte_set(range_set(b, b)));
        return count(n.bytes.size());
      case Kind::CharClass:
        return emit_class(n.chars, owner, seq);
      case Kind::RuleRef:
        seq.push_back(rule_element((uint32_t)ast_.index.at(n.rule)));
        return count(1);
      case Kind::Sequence:
        for (const GrammarNode& c : n.children) STRIDE_RETURN_IF_ERROR(emit(c, owner, seq));
        return Status::Ok();
      case Kind::Choice: {
        auto u = unit(n, owner);
        if (!u.ok()) return u.status();
        seq.push_back(*u);
        return count(1);
      }
      case Kind::Repeat:
        return emit_repeat(n, owner, seq);
    }
    return Internal("grammar: unknown node");
  }

  Status emit_repeat(const GrammarNode& n, uint32_t owner, std::vector<uint32_t>& seq) {
    auto u = unit(n.children[0], owner);
    if (!u.ok()) return u.status();
    STRIDE_RETURN_IF_ERROR(count((size_t)n.min));
    for (int k = 0; k < n.min; ++k) seq.push_back(*u);
    if (n.max < 0) {  // star ::= unit star | ""
      const uint32_t star = derived_rule(owner);
      alts_[star].push_back({*u, rule_element(star)});
      alts_[star].push_back({});
      seq.push_back(rule_element(star));
      return count(5);
    }
    // opt_k ::= unit opt_(k-1) | ""  (opt_1 ::= unit | "")
    uint32_t prev = 0;
    for (int k = 1; k <= n.max - n.min; ++k) {
      const uint32_t opt = derived_rule(owner);
      if (k == 1) {
        alts_[opt].push_back({*u});
      } else {
        alts_[opt].push_back({*u, rule_element(prev)});
      }
      alts_[opt].push_back({});
      STRIDE_RETURN_IF_ERROR(count(5));
      prev = opt;
    }
    if (n.max > n.min) seq.push_back(rule_element(prev));
    return Status::Ok();
  }

  const GrammarAst& ast_;
  const GrammarLimits& limits_;
  std::vector<std::string> names_;
  std::vector<std::vector<std::vector<uint32_t>>> alts_;  // [rule][alternative] elements without End
  std::vector<ByteSet> sets_;
  std::map<ByteSet, uint32_t> set_index_;
  std::map<std::string, uint32_t> class_rules_;
  size_t elements_ = 0;
};

}  // namespace

Expected<std::shared_ptr<const CompiledGrammar>> compile_grammar(const GrammarAst& ast, const GrammarLimits& limits) {
  return Compiler(ast, limits).run();
}

Expected<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view text, const GrammarLimits& limits) {
  auto ast = parse_gbnf(text, limits);
  if (!ast.ok()) return ast.status();
  return compile_grammar(*ast, limits);
}

}  // namespace stride::grammar
