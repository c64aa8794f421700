#pragma once
// The pushdown automaton of a compiled grammar, built lazily over bytes.
//
// A parse stack is a chain of positions (an element index into the grammar):
// the top is a byte-set element waiting for input, each node below is where
// to continue once the rule above it ends. Stacks are hash-consed, so equal
// stacks share one id and a step copies nothing. A state is the set of all
// stacks the input so far allows (an Earley-like frontier), plus whether the
// input is a complete sentence; states are interned too, and each
// (state, byte) transition is computed once and then read from a table.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace stride::grammar {

class GrammarStates {
 public:
  static constexpr uint32_t kDead = 0;  // no stack survives: the input left the language

  // work_limit bounds the first closure too (see set_work_limit).
  explicit GrammarStates(std::shared_ptr<const CompiledGrammar> grammar, uint64_t work_limit = UINT64_MAX);

  uint32_t initial() const { return initial_; }
  uint32_t advance(uint32_t state, uint8_t byte) {
    const int32_t t = transitions_[(size_t)state * 256 + byte];
    return t >= 0 ? (uint32_t)t : compute(state, byte);
  }
  bool accepting(uint32_t state) const { return states_[state].accepting; }
  // A state that can still take a byte (else only the end may follow).
  bool can_continue(uint32_t state) const { return !states_[state].leaves.empty(); }

  // Parse work (stack steps) done so far, and a limit past which every new
  // transition is dead and exhausted() is set: a grammar so ambiguous that
  // one token costs more than the limit fails instead of stalling the server.
  uint64_t work() const { return steps_; }
  void set_work_limit(uint64_t limit) { step_limit_ = limit; }
  bool exhausted() const { return exhausted_; }

  size_t n_states() const { return states_.size(); }
  size_t n_stack_nodes() const { return nodes_.size(); }
  // Forgets every state and stack but those of `keep` (memory stays bounded
  // on long generations); returns its new id. Other ids become invalid.
  uint32_t compact(uint32_t keep);

 private:
  static constexpr uint32_t kNoParent = UINT32_MAX;
  struct StackNode {
    uint32_t pos, parent;
  };
  struct State {
    std::vector<uint32_t> leaves;  // stack ids, sorted
    bool accepting = false;
  };

  uint32_t intern_node(uint32_t pos, uint32_t parent);
  uint32_t intern_state();  // from leaves_ / accepting_
  void closure();           // expands work_ into leaves_ / accepting_
  uint32_t compute(uint32_t state, uint8_t byte);
  void reset_tables();

  std::shared_ptr<const CompiledGrammar> g_;
  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_index_;
  std::vector<State> states_;
  std::unordered_map<std::string, uint32_t> state_index_;
  std::vector<int32_t> transitions_;  // [state][256]; -1: not computed yet
  uint32_t initial_ = kDead;

  // Scratch of one closure.
  std::vector<std::pair<uint32_t, uint32_t>> work_;  // (position, parent stack)
  std::unordered_set<uint64_t> seen_;
  std::vector<uint32_t> leaves_;
  bool accepting_ = false;
  uint64_t steps_ = 0, step_limit_ = UINT64_MAX;
  bool exhausted_ = false;
};

}  // namespace stride::grammar
