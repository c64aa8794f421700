#include "eval/ruler_haystack.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <unordered_set>

namespace stride {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// A sentence ends at a newline, or at . ? ! followed by whitespace, except a
// period after a digit ("1.2. Links" is a heading number, not a sentence).
bool ends_sentence(const std::string& t, size_t i) {
  if (t[i] == '\n') return true;
  if (t[i] != '.' && t[i] != '?' && t[i] != '!') return false;
  if (i + 1 < t.size() && !is_space(t[i + 1])) return false;
  return !(t[i] == '.' && i > 0 && std::isdigit((unsigned char)t[i - 1]));
}

// Longer sentences (flattened tables, command lines) are cut after a space,
// so the prompt's size can be set to within a few tokens.
constexpr size_t kMaxSentenceBytes = 120;

void push_sentence(const std::string& t, size_t begin, size_t end, std::vector<TextSpan>& out) {
  while (end - begin > kMaxSentenceBytes) {
    const size_t space = t.rfind(' ', begin + kMaxSentenceBytes - 1);
    if (space == std::string::npos || space <= begin) break;
    out.push_back({begin, space + 1});
    begin = space + 1;
  }
  out.push_back({begin, end});
}

// Sentence byte ranges; whitespace after a sentence belongs to it, and
// blank-only pieces are dropped.
std::vector<TextSpan> split_sentences(const std::string& t) {
  std::vector<TextSpan> out;
  size_t begin = 0;
  while (begin < t.size() && is_space(t[begin])) ++begin;
  for (size_t i = begin; i < t.size(); ++i) {
    if (!ends_sentence(t, i) && i + 1 != t.size()) continue;
    size_t end = i + 1;
    while (end < t.size() && is_space(t[end])) ++end;
    push_sentence(t, begin, end, out);
    begin = end;
    i = end - 1;
  }
  return out;
}

std::vector<std::string> lower_case_words(const std::string& t) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  size_t i = 0;
  while (i < t.size()) {
    if (!std::isalpha((unsigned char)t[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    bool lower = true;
    for (; j < t.size() && std::isalpha((unsigned char)t[j]); ++j) lower = lower && std::islower((unsigned char)t[j]);
    // Words glued to digits or underscores ("x86", "ls_colors") are not plain words.
    const bool plain = (i == 0 || (!std::isalnum((unsigned char)t[i - 1]) && t[i - 1] != '_')) &&
                       (j == t.size() || (!std::isdigit((unsigned char)t[j]) && t[j] != '_'));
    const size_t n = j - i;
    if (lower && plain && n >= 4 && n <= 10) {
      std::string w = t.substr(i, n);
      if (seen.insert(w).second) out.push_back(std::move(w));
    }
    i = j;
  }
  return out;
}

}  // namespace

Expected<Haystack> Haystack::from_text(std::string text, const Tokenizer& tok) {
  Haystack h;
  h.text_ = std::move(text);
  h.sentences_ = split_sentences(h.text_);
  if (h.sentences_.empty()) return InvalidArgument("the haystack text holds no sentences");
  h.sentence_tokens_.reserve(h.sentences_.size());
  for (const TextSpan& s : h.sentences_) {
    const std::string_view piece(h.text_.data() + s.begin, s.end - s.begin);
    h.sentence_tokens_.push_back((int32_t)tok.encode(piece, false, false).size());
  }
  h.total_tokens_ = std::accumulate(h.sentence_tokens_.begin(), h.sentence_tokens_.end(), (int64_t)0);
  h.vocabulary_ = lower_case_words(h.text_);
  return h;
}

int64_t Haystack::sentences_for_tokens(size_t first, int64_t tokens) const {
  const size_t n = sentences_.size();
  int64_t sum = 0, count = 0;
  while (count < (int64_t)n && sum < tokens) sum += sentence_tokens_[(first + count++) % n];
  return count;
}

WovenText Haystack::weave(size_t first, size_t count, const std::vector<HaystackInsert>& inserts) const {
  const size_t n = sentences_.size();
  // Token offset of every boundary: before[k] = tokens of sentences [0, k) of the run.
  std::vector<int64_t> before(count + 1, 0);
  for (size_t k = 0; k < count; ++k) before[k + 1] = before[k] + sentence_tokens_[(first + k) % n];
  std::vector<size_t> slot(inserts.size());
  for (size_t i = 0; i < inserts.size(); ++i) {
    const double want = std::clamp(inserts[i].depth, 0.0, 1.0) * (double)before[count];
    const auto it = std::lower_bound(before.begin(), before.end(), (int64_t)want);
    size_t k = (size_t)(it - before.begin());
    if (k > 0 && want - (double)before[k - 1] < (double)before[k] - want) --k;
    slot[i] = std::min(k, count);
  }
  // Inserts in boundary order; several at one boundary keep the order given.
  std::vector<size_t> order(inserts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return slot[a] < slot[b]; });

  WovenText out;
  out.insert_offsets.resize(inserts.size());
  size_t next = 0;
  for (size_t k = 0; k <= count; ++k) {
    for (; next < order.size() && slot[order[next]] == k; ++next) {
      if (!out.text.empty() && !is_space(out.text.back())) out.text += ' ';
      out.insert_offsets[order[next]] = out.text.size();
      // Between lines the insert is a line of its own; inside a paragraph, a sentence.
      const bool own_line = !out.text.empty() && out.text.back() == '\n';
      out.text += inserts[order[next]].text;
      out.text += own_line ? '\n' : ' ';
    }
    if (k == count) break;
    const TextSpan& s = sentences_[(first + k) % n];
    out.text.append(text_, s.begin, s.end - s.begin);
  }
  return out;
}

}  // namespace stride
