#include "grammar/grammar_states.h"

#include <algorithm>

namespace stride::grammar {

using G = CompiledGrammar;

GrammarStates::GrammarStates(std::shared_ptr<const CompiledGrammar> grammar, uint64_t work_limit)
    : g_(std::move(grammar)), step_limit_(work_limit) {
  reset_tables();
  for (uint32_t a : g_->rule_alts[g_->root]) work_.push_back({a, kNoParent});
  closure();
  initial_ = intern_state();
}

void GrammarStates::reset_tables() {
  nodes_.clear();
  node_index_.clear();
  states_.clear();
  state_index_.clear();
  transitions_.clear();
  states_.push_back(State{});  // kDead
  state_index_[std::string(1, '\0')] = kDead;
  transitions_.assign(256, (int32_t)kDead);
}

uint32_t GrammarStates::intern_node(uint32_t pos, uint32_t parent) {
  const uint64_t key = ((uint64_t)pos << 32) | parent;
  auto [it, fresh] = node_index_.emplace(key, (uint32_t)nodes_.size());
  if (fresh) nodes_.push_back({pos, parent});
  return it->second;
}

void GrammarStates::closure() {
  seen_.clear();
  while (!work_.empty()) {
    if (++steps_ > step_limit_) {
      exhausted_ = true;
      work_.clear();
      leaves_.clear();
      accepting_ = false;
      return;
    }
    const auto [pos, parent] = work_.back();
    work_.pop_back();
    if (!seen_.insert(((uint64_t)pos << 32) | parent).second) continue;
    const uint32_t e = g_->elements[pos];
    switch (G::kind(e)) {
      case ElementKind::End:
        if (parent == kNoParent) {
          accepting_ = true;
        } else {
          work_.push_back({nodes_[parent].pos, nodes_[parent].parent});
        }
        break;
      case ElementKind::Bytes:
        leaves_.push_back(intern_node(pos, parent));
        break;
      case ElementKind::Rule: {
        // A reference in tail position leaves nothing behind (so x ::= a x
        // repeats in constant stack depth).
        const uint32_t next = pos + 1;
        const uint32_t below = G::kind(g_->elements[next]) == ElementKind::End ? parent : intern_node(next, parent);
        for (uint32_t a : g_->rule_alts[G::arg(e)]) work_.push_back({a, below});
        break;
      }
    }
  }
}

uint32_t GrammarStates::intern_state() {
  std::sort(leaves_.begin(), leaves_.end());
  leaves_.erase(std::unique(leaves_.begin(), leaves_.end()), leaves_.end());
  std::string key(1, accepting_ ? '\1' : '\0');
  key.append((const char*)leaves_.data(), leaves_.size() * sizeof(uint32_t));
  auto [it, fresh] = state_index_.emplace(std::move(key), (uint32_t)states_.size());
  if (fresh) {
    states_.push_back(State{leaves_, accepting_});
    transitions_.resize(states_.size() * 256, -1);
  }
  leaves_.clear();
  accepting_ = false;
  return it->second;
}

uint32_t GrammarStates::compute(uint32_t state, uint8_t byte) {
  if (exhausted_) return kDead;
  for (uint32_t leaf : states_[state].leaves) {
    const StackNode n = nodes_[leaf];
    if (g_->byte_in(G::arg(g_->elements[n.pos]), byte)) work_.push_back({n.pos + 1, n.parent});
  }
  closure();
  if (exhausted_) return kDead;  // not recorded: the sequence fails
  const uint32_t next = intern_state();
  transitions_[(size_t)state * 256 + byte] = (int32_t)next;
  return next;
}

uint32_t GrammarStates::compact(uint32_t keep) {
  // Each stack of `keep` as its positions, top first.
  std::vector<std::vector<uint32_t>> stacks;
  for (uint32_t leaf : states_[keep].leaves) {
    std::vector<uint32_t> s;
    for (uint32_t n = leaf; n != kNoParent; n = nodes_[n].parent) s.push_back(nodes_[n].pos);
    stacks.push_back(std::move(s));
  }
  const bool accepting = states_[keep].accepting;
  reset_tables();
  for (const std::vector<uint32_t>& s : stacks) {
    uint32_t below = kNoParent;
    for (auto it = s.rbegin(); it != s.rend(); ++it) below = intern_node(*it, below);
    leaves_.push_back(below);
  }
  accepting_ = accepting;
  const uint32_t id = intern_state();
  // The initial state is rebuilt on demand only through `keep`; keep its id valid.
  for (uint32_t a : g_->rule_alts[g_->root]) work_.push_back({a, kNoParent});
  closure();
  initial_ = intern_state();
  return id;
}

}  // namespace stride::grammar
