// The expected answers are right by construction: the needles, chains and
// word lists are read back out of the prompt text and solved independently.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "eval/ruler_words.h"
#include "ruler_test_support.h"

namespace stride {
namespace {

using ruler_test::document;
using ruler_test::smol;

TaskInstance make(RulerTask task, uint64_t seed, int64_t length = 2048) {
  TaskSpec spec;
  spec.task = task;
  spec.target_tokens = length;
  spec.depth = 0.4;
  spec.seed = seed;
  const PromptFormat completion = PromptFormat::completion();
  auto t = make_task(spec, TaskContext{*document(), *smol()->tok, completion});
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? std::move(*t) : TaskInstance{};
}

// key -> values of every "One of the special magic numbers for KEY is: VALUE." in the text.
std::map<std::string, std::vector<std::string>> needles(const std::string& text) {
  static const std::regex re("One of the special magic numbers for ([a-z0-9-]+) is: ([0-9]{7})\\.");
  std::map<std::string, std::vector<std::string>> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out[(*it)[1]].push_back((*it)[2]);
  return out;
}

// What the question asks: the text between the first `before` and the `after` following it.
std::string asked(const std::string& text, const std::string& before, const std::string& after) {
  const size_t q = text.find(before);
  if (q == std::string::npos) return {};
  const size_t from = q + before.size();
  return text.substr(from, text.find(after, from) - from);
}

class RulerAnswers : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(smol() && document()); }
};

TEST_F(RulerAnswers, NeedleTasksAskWhatTheNeedlesHold) {
  for (uint64_t seed : {1, 2, 3}) {
    const TaskInstance single = make(RulerTask::NiahSingle, seed);
    auto n = needles(single.prompt.text);
    ASSERT_EQ(n.size(), 1u);
    const std::string key = asked(single.prompt.text, "What is the special magic number for ", " mentioned");
    EXPECT_EQ(n[key], single.expected);

    const TaskInstance multikey = make(RulerTask::NiahMultikey, seed);
    n = needles(multikey.prompt.text);
    ASSERT_EQ(n.size(), 4u);  // the asked key and 3 distractors, one value each
    const std::string mk = asked(multikey.prompt.text, "What is the special magic number for ", " mentioned");
    ASSERT_EQ(n.count(mk), 1u);
    EXPECT_EQ(n[mk], multikey.expected);
    for (auto& [k, v] : n) EXPECT_EQ(v.size(), 1u);

    const TaskInstance multivalue = make(RulerTask::NiahMultivalue, seed);
    n = needles(multivalue.prompt.text);
    ASSERT_EQ(n.size(), 1u);
    const std::string mv = asked(multivalue.prompt.text, "What are all the special magic numbers for ", " mentioned");
    ASSERT_EQ(n[mv].size(), 4u);
    EXPECT_EQ(std::set<std::string>(n[mv].begin(), n[mv].end()),
              std::set<std::string>(multivalue.expected.begin(), multivalue.expected.end()));

    const TaskInstance multiquery = make(RulerTask::NiahMultiquery, seed);
    n = needles(multiquery.prompt.text);
    ASSERT_EQ(n.size(), 4u);
    const std::string keys = asked(multiquery.prompt.text, "What are all the special magic numbers for ", " mentioned");
    std::set<std::string> want;
    for (auto& [k, v] : n) {
      EXPECT_NE(keys.find(k), std::string::npos) << k << " not asked in: " << keys;
      ASSERT_EQ(v.size(), 1u);
      want.insert(v[0]);
    }
    EXPECT_EQ(want, std::set<std::string>(multiquery.expected.begin(), multiquery.expected.end()));
  }
}

TEST_F(RulerAnswers, VariableTrackingFollowsTheChainInTheText) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    const TaskInstance t = make(RulerTask::VariableTracking, seed);
    static const std::regex re("VAR ([A-Z]{5}) = (VAR ([A-Z]{5})|([0-9]{5}))\\.");
    std::map<std::string, std::string> value;  // resolved in text order: a chain reads forwards
    int statements = 0;
    for (auto it = std::sregex_iterator(t.prompt.text.begin(), t.prompt.text.end(), re); it != std::sregex_iterator();
         ++it, ++statements) {
      const std::string var = (*it)[1], from = (*it)[3], number = (*it)[4];
      ASSERT_TRUE(from.empty() || value.count(from)) << var << " uses " << from << " before it is assigned";
      value[var] = from.empty() ? number : value[from];
    }
    EXPECT_EQ(statements, 10);  // two chains of 5
    const std::string v = asked(t.prompt.text, "assigned the value ", " in the text above.");
    ASSERT_EQ(v.size(), 5u);
    std::set<std::string> holding;
    for (auto& [var, val] : value)
      if (val == v) holding.insert(var);
    EXPECT_EQ(holding.size(), 5u);
    EXPECT_EQ(holding, std::set<std::string>(t.expected.begin(), t.expected.end()));
  }
}

// Words in order of count, most first; counts alongside.
std::vector<std::pair<int, std::string>> by_count(const std::vector<std::string>& words) {
  std::map<std::string, int> n;
  for (const std::string& w : words) ++n[w];
  std::vector<std::pair<int, std::string>> out;
  for (auto& [w, c] : n) out.push_back({c, w});
  std::sort(out.rbegin(), out.rend());
  return out;
}

void expect_top(const std::vector<std::string>& words, const std::vector<std::string>& expected, size_t k) {
  const auto ranked = by_count(words);
  ASSERT_GT(ranked.size(), k);
  EXPECT_GT(ranked[k - 1].first, ranked[k].first) << "no strict gap after the top " << k;
  std::set<std::string> top;
  for (size_t i = 0; i < k; ++i) top.insert(ranked[i].second);
  EXPECT_EQ(top, std::set<std::string>(expected.begin(), expected.end()));
}

TEST_F(RulerAnswers, CommonWordsAreTheTenMostFrequentInTheList) {
  for (uint64_t seed : {1, 2, 3}) {
    const TaskInstance t = make(RulerTask::CommonWords, seed);
    std::vector<std::string> words;
    static const std::regex item("(?:^|\n)([0-9]+)\\. ([a-z]+)(?=\n)");
    int number = 0;
    for (auto it = std::sregex_iterator(t.prompt.text.begin(), t.prompt.text.end(), item);
         it != std::sregex_iterator(); ++it) {
      EXPECT_EQ(std::stoi((*it)[1]), ++number);  // numbered 1, 2, 3 ...
      words.push_back((*it)[2]);
    }
    EXPECT_GT(words.size(), 200u);
    ASSERT_EQ(t.expected.size(), 10u);
    expect_top(words, t.expected, 10);
  }
  // Tiny lists too: the rare words appear once, the common ones at least twice.
  const WordList small = common_words_list({"alpha", "bravo"}, 9, 40);
  EXPECT_EQ(small.words.size(), 40u);
  expect_top(small.words, small.expected, 10);
}

TEST_F(RulerAnswers, FrequentWordsAreTheThreeMostFrequentInTheCodedText) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    const TaskInstance t = make(RulerTask::FrequentWords, seed);
    const std::string& text = t.prompt.text;
    const size_t from = text.find("coded words.\n") + 13;
    const size_t to = text.find("\nQuestion:", from);
    ASSERT_NE(to, std::string::npos);
    std::vector<std::string> words;
    std::stringstream ss(text.substr(from, to - from));
    for (std::string w; ss >> w;) words.push_back(w);
    EXPECT_GT(words.size(), 300u);
    ASSERT_EQ(t.expected.size(), 3u);
    expect_top(words, t.expected, 3);
  }
  // Zipf: the most frequent word takes about 6/pi^2 = 61% of a long text.
  const WordList big = frequent_words_list(3, 20000);
  const auto ranked = by_count(big.words);
  EXPECT_NEAR((double)ranked[0].first / 20000.0, 0.608, 0.02);
  EXPECT_NEAR((double)ranked[1].first / (double)ranked[0].first, 0.25, 0.03);
}

}  // namespace
}  // namespace stride
