#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <limits>

namespace stride::grammar {

namespace {
// Bounds on what one sequence keeps: past these, the automaton is rebuilt
// from the current state and the mask cache starts again.
constexpr size_t kMaxStates = 20000;            // 1 KiB of transitions each
constexpr size_t kMaxStackNodes = 4u << 20;
constexpr size_t kMaskCacheBytes = 32u << 20;
}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenTrie> trie,
                               uint64_t work_limit)
    : trie_(std::move(trie)),
      work_limit_(work_limit),
      states_(std::move(grammar), work_limit),
      state_(states_.initial()) {
  const size_t mask_bytes = ((size_t)trie_->n_vocab() + 63) / 64 * 8;
  max_cached_masks_ = std::max<size_t>(4, kMaskCacheBytes / std::max<size_t>(mask_bytes, 1));
  depth_state_.resize((size_t)trie_->max_depth() + 1);
}

void GrammarMatcher::compute_mask(std::vector<uint64_t>& words) {
  words.assign(((size_t)trie_->n_vocab() + 63) / 64, 0);
  auto set = [&](int32_t t) { words[(size_t)t >> 6] |= 1ull << (t & 63); };
  if (ended_) return;
  if (states_.accepting(state_))
    for (int32_t t : trie_->end_tokens()) set(t);
  if (!states_.can_continue(state_)) return;
  const std::vector<TokenTrie::Node>& nodes = trie_->nodes();
  const int32_t* tokens = trie_->tokens().data();
  depth_state_[0] = state_;
  size_t i = 0;
  while (i < nodes.size()) {
    const TokenTrie::Node& n = nodes[i];
    const uint32_t s = states_.advance(depth_state_[n.depth - 1u], n.byte);
    if (s == GrammarStates::kDead) {
      i = n.subtree_end;  // no token with this prefix can follow
      continue;
    }
    depth_state_[n.depth] = s;
    for (uint32_t k = n.tokens_begin; k < n.tokens_end; ++k) set(tokens[k]);
    ++i;
  }
}

const std::vector<uint64_t>& GrammarMatcher::allowed_tokens() {
  if (ended_) {  // nothing follows an end token
    none_.assign(((size_t)trie_->n_vocab() + 63) / 64, 0);
    return none_;
  }
  auto it = mask_cache_.find(state_);
  if (it != mask_cache_.end()) return it->second;
  if (mask_cache_.size() >= max_cached_masks_) mask_cache_.clear();
  std::vector<uint64_t> words;
  states_.set_work_limit(states_.work() + work_limit_);
  compute_mask(words);
  if (states_.exhausted()) std::fill(words.begin(), words.end(), 0);
  return mask_cache_.emplace(state_, std::move(words)).first->second;
}

bool GrammarMatcher::allowed(int32_t id) {
  if (id < 0 || id >= trie_->n_vocab()) return false;
  return (allowed_tokens()[(size_t)id >> 6] >> (id & 63)) & 1;
}

void GrammarMatcher::mask_logits(float* logits, int n_vocab) {
  const std::vector<uint64_t>& words = allowed_tokens();
  const int n = std::min(n_vocab, trie_->n_vocab());
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // Word by word: most words are all-out (a fill) or all-in (nothing to do).
  for (int base = 0; base < n; base += 64) {
    const uint64_t w = words[(size_t)base >> 6];
    const int end = std::min(n, base + 64);
    if (w == ~0ull) continue;
    if (w == 0) {
      std::fill(logits + base, logits + end, kNegInf);
      continue;
    }
    for (int t = base; t < end; ++t)
      if (!((w >> (t - base)) & 1)) logits[t] = kNegInf;
  }
  for (int t = n; t < n_vocab; ++t) logits[t] = kNegInf;  // ids the tokenizer does not know
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (ended_) return false;
  uint32_t s = state_;
  states_.set_work_limit(states_.work() + work_limit_);
  for (char c : bytes) {
    s = states_.advance(s, (uint8_t)c);
    if (s == GrammarStates::kDead) return false;
  }
  state_ = s;
  if (states_.n_states() > kMaxStates || states_.n_stack_nodes() > kMaxStackNodes) {
    state_ = states_.compact(state_);
    mask_cache_.clear();
  }
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  if (id < 0 || id >= trie_->n_vocab() || ended_) return false;
  if (trie_->is_end(id)) {
    if (!states_.accepting(state_)) return false;
    ended_ = true;
    return true;
  }
  const std::string& piece = trie_->piece(id);
  if (piece.empty()) return false;
  return accept_bytes(piece);
}

}  // namespace stride::grammar
