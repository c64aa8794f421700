#pragma once
// Constrained decoding for one sequence: which tokens may come next under a
// grammar, and the state after the token that was sampled.
//
// allowed_tokens() walks the vocabulary trie once, feeding each node's byte
// to the state of its parent node and skipping the subtree of any node the
// grammar rejects; a token is allowed when the walk reaches the node where
// its bytes end. Bytes, not characters, drive the automaton, so tokens that
// hold part of a UTF-8 character are checked exactly. End-of-generation
// tokens are allowed only where the input so far is a complete sentence.
// Masks are cached per automaton state: a state seen before (inside a
// string, between array items) costs one lookup.
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_states.h"
#include "grammar/token_trie.h"

namespace stride::grammar {

class GrammarMatcher {
 public:
  // work_limit: the most parse work one token may take (see exhausted()).
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenTrie> trie,
                 uint64_t work_limit = kMaxWorkPerToken);

  // Bit t of word t / 64 is set when token t may come next; [n_vocab / 64 rounded up].
  const std::vector<uint64_t>& allowed_tokens();
  bool allowed(int32_t id);
  // Takes a sampled token; false (and no change) when the grammar does not allow it.
  bool accept_token(int32_t id);
  // Takes raw bytes; false (and no change) when they leave the language.
  bool accept_bytes(std::string_view bytes);

  bool is_complete() const { return states_.accepting(state_); }  // an end token may come now
  bool can_continue() const { return states_.can_continue(state_); }
  bool ended() const { return ended_; }                          // an end token was accepted
  // The grammar needed more parse work for one token than the limit: the
  // mask is empty from then on and the sequence should fail. The default is
  // about 20 times what the JSON schemas of the tests need on a 262K-token
  // vocabulary, and a few tens of milliseconds of one core.
  bool exhausted() const { return states_.exhausted(); }
  static constexpr uint64_t kMaxWorkPerToken = 1'000'000;

  // Sets every logit of a token the grammar does not allow to -inf.
  void mask_logits(float* logits, int n_vocab);

 private:
  void compute_mask(std::vector<uint64_t>& words);

  std::shared_ptr<const TokenTrie> trie_;
  uint64_t work_limit_;
  GrammarStates states_;
  uint32_t state_;
  bool ended_ = false;
  std::unordered_map<uint32_t, std::vector<uint64_t>> mask_cache_;  // state -> mask
  size_t max_cached_masks_ = 0;
  std::vector<uint32_t> depth_state_;  // trie walk: the state after the first d bytes
  std::vector<uint64_t> none_;         // the mask after an end token
};

}  // namespace stride::grammar
