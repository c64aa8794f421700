#include "eval/ruler_words.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_set>

#include "eval/ruler_random.h"
#include "eval/ruler_tasks.h"

namespace stride {

namespace {

constexpr double kZipfAlpha = 2.0;

// `n` distinct words: a seeded sample of the vocabulary, then made-up ones.
std::vector<std::string> draw_words(const std::vector<std::string>& vocabulary, size_t n, SplitMix64& rng) {
  std::vector<size_t> order(vocabulary.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  // Partial Fisher-Yates: only the first n places are drawn.
  for (size_t i = 0; i < order.size() && out.size() < n; ++i) {
    std::swap(order[i], order[i + rng.below(order.size() - i)]);
    if (seen.insert(vocabulary[order[i]]).second) out.push_back(vocabulary[order[i]]);
  }
  while (out.size() < n) {
    std::string w = pseudo_word(rng, 3);
    if (seen.insert(w).second) out.push_back(std::move(w));
  }
  return out;
}

// Words ranked by count (ties: first shown first).
std::vector<std::pair<std::string, int64_t>> ranked(const std::vector<std::string>& words) {
  std::map<std::string, std::pair<int64_t, size_t>> by;  // word -> (count, first index)
  for (size_t i = 0; i < words.size(); ++i) {
    auto [it, fresh] = by.try_emplace(words[i], 0, i);
    ++it->second.first;
  }
  std::vector<std::pair<std::pair<int64_t, size_t>, std::string>> v;
  for (auto& [w, cf] : by) v.push_back({cf, w});
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first.first != b.first.first ? a.first.first > b.first.first : a.first.second < b.first.second;
  });
  std::vector<std::pair<std::string, int64_t>> out;
  for (auto& [cf, w] : v) out.push_back({w, cf.first});
  return out;
}

std::string numbered(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) s += std::to_string(i + 1) + ". " + words[i] + "\n";
  return s;
}

std::string spaced(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

}  // namespace

WordList common_words_list(const std::vector<std::string>& vocabulary, uint64_t seed, int64_t items) {
  SplitMix64 rng(seed);
  // About 30% of the list is the common words, each at most 30 times (as
  // RULER's cwe); rare words appear a tenth as often, at least once.
  const int64_t common = std::clamp<int64_t>(items * 3 / (10 * kCommonWords), 2, 30);
  const int64_t rare = std::max<int64_t>(1, common / 10);
  const int64_t n_rare = std::max<int64_t>(0, (items - kCommonWords * common) / rare);
  const std::vector<std::string> pool = draw_words(vocabulary, (size_t)(kCommonWords + n_rare), rng);
  WordList out;
  for (size_t w = 0; w < pool.size(); ++w) {
    const int64_t times = (int64_t)w < kCommonWords ? common : rare;
    for (int64_t i = 0; i < times; ++i) out.words.push_back(pool[w]);
  }
  out.expected.assign(pool.begin(), pool.begin() + std::min<size_t>(kCommonWords, pool.size()));
  shuffle(out.words, rng);
  return out;
}

WordList frequent_words_list(uint64_t seed, int64_t count) {
  SplitMix64 rng(seed);
  const size_t vocab = (size_t)std::clamp<int64_t>(count / 2, 2 * kFrequentWords, 2000);
  const std::vector<std::string> words = draw_words({}, vocab, rng);
  std::vector<double> cdf(vocab);
  double sum = 0;
  for (size_t k = 0; k < vocab; ++k) cdf[k] = sum += std::pow((double)(k + 1), -kZipfAlpha);
  WordList out;
  for (int64_t i = 0; i < count; ++i) {
    const double u = rng.unit() * sum;
    const size_t k = std::min(vocab - 1, (size_t)(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin()));
    out.words.push_back(words[k]);
  }
  auto rank = ranked(out.words);
  if (rank.size() > kFrequentWords && rank[kFrequentWords - 1].second == rank[kFrequentWords].second) {
    // A tie at the cut: the next word gives one occurrence to the last expected one.
    const std::string& from = rank[kFrequentWords].first;
    const auto it = std::find(out.words.rbegin(), out.words.rend(), from);
    *it = rank[kFrequentWords - 1].first;
    rank = ranked(out.words);
  }
  for (size_t i = 0; i < std::min<size_t>(kFrequentWords, rank.size()); ++i) out.expected.push_back(rank[i].first);
  return out;
}

Expected<TaskInstance> make_common_words_task(const TaskSpec& spec, const TaskContext& ctx) {
  const std::vector<std::string>& vocabulary = ctx.haystack.vocabulary();
  PromptSizing sizing;
  sizing.target_tokens = spec.target_tokens;
  sizing.max_units = spec.target_tokens;  // every item is more than one token
  sizing.task_text = [&](int64_t n) {
    return "Below is a numbered list of words. In these words, some appear more often than others. "
           "Memorize the ones that appear most often.\n" +
           numbered(common_words_list(vocabulary, spec.seed, n).words) +
           "Question: What are the " + std::to_string(kCommonWords) + " most common words in the list above?";
  };
  sizing.units_for_tokens = [](int64_t tokens) { return tokens / 4; };
  sizing.answer_prefix =
      "Answer: The top " + std::to_string(kCommonWords) + " words that appear most often in the list are:";
  STRIDE_ASSIGN_OR_RETURN(FittedPrompt f, fit_prompt(ctx.tokenizer, ctx.format, sizing));
  if (f.units < 2 * kCommonWords) return InvalidArgument("the list needs more room than the length leaves");
  WordList list = common_words_list(vocabulary, spec.seed, f.units);
  return finish_task(spec, std::move(f), std::move(list.expected));
}

Expected<TaskInstance> make_frequent_words_task(const TaskSpec& spec, const TaskContext& ctx) {
  PromptSizing sizing;
  sizing.target_tokens = spec.target_tokens;
  sizing.max_units = spec.target_tokens;
  sizing.task_text = [&](int64_t n) {
    return "Read the following coded text and track the frequency of each coded word. Find the " +
           std::to_string(kFrequentWords) + " most frequently appeared coded words.\n" +
           spaced(frequent_words_list(spec.seed, n).words) +
           "\nQuestion: What are the " + std::to_string(kFrequentWords) +
           " most frequently appeared words in the above coded text?";
  };
  sizing.units_for_tokens = [](int64_t tokens) { return tokens / 3; };
  sizing.answer_prefix = "Answer: According to the coded text above, the " + std::to_string(kFrequentWords) +
                         " most frequently appeared words are:";
  STRIDE_ASSIGN_OR_RETURN(FittedPrompt f, fit_prompt(ctx.tokenizer, ctx.format, sizing));
  if (f.units < 10 * kFrequentWords) return InvalidArgument("the coded text needs more room than the length leaves");
  WordList list = frequent_words_list(spec.seed, f.units);
  return finish_task(spec, std::move(f), std::move(list.expected));
}

}  // namespace stride
