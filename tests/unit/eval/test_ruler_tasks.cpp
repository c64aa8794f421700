// The tasks' prompts with SmolLM2's tokenizer and the real document: the
// same seed gives the same bytes, the prompt is sized to its length, the
// needle sits at its depth, and every expected answer is in the prompt.
#include <gtest/gtest.h>

#include <cmath>

#include "eval/passkey.h"
#include "eval/ruler_suite.h"
#include "ruler_test_support.h"

namespace stride {
namespace {

using ruler_test::document;
using ruler_test::smol;
using ruler_test::smol_chat;
using ruler_test::tokens_before;

Expected<TaskInstance> make(RulerTask task, int64_t length, double depth, uint64_t seed, const PromptFormat& format) {
  TaskSpec spec;
  spec.task = task;
  spec.target_tokens = length;
  spec.depth = depth;
  spec.seed = seed;
  return make_task(spec, TaskContext{*document(), *smol()->tok, format});
}

class RulerTasks : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(smol() && document()); }
  const PromptFormat completion_ = PromptFormat::completion();
};

TEST_F(RulerTasks, SameSeedSameBytesOtherSeedOtherPrompt) {
  for (RulerTask task : all_ruler_tasks()) {
    SCOPED_TRACE(ruler_task_name(task));
    auto a = make(task, 1024, 0.3, 11, completion_);
    auto b = make(task, 1024, 0.3, 11, completion_);
    auto c = make(task, 1024, 0.3, 12, completion_);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status().to_string() << c.status().to_string();
    EXPECT_EQ(a->prompt.text, b->prompt.text);
    EXPECT_EQ(a->ids, b->ids);
    EXPECT_EQ(a->expected, b->expected);
    EXPECT_NE(a->prompt.text, c->prompt.text);
    EXPECT_NE(a->expected, c->expected);
  }
}

TEST_F(RulerTasks, PromptsAreWithinFivePercentOfTheirLength) {
  const PromptFormat chat = smol_chat();
  for (const PromptFormat* format : {&completion_, &chat}) {
    for (int64_t length : {1024, 4096}) {
      for (RulerTask task : all_ruler_tasks()) {
        SCOPED_TRACE(std::string(ruler_task_name(task)) + " " + std::to_string(length) +
                     (format->is_chat() ? " chat" : ""));
        auto t = make(task, length, 0.5, 3, *format);
        ASSERT_TRUE(t.ok()) << t.status().to_string();
        EXPECT_NEAR((double)t->ids.size(), (double)length, 0.05 * (double)length);
        EXPECT_EQ(t->ids, encode_prompt(*smol()->tok, t->prompt));
      }
    }
  }
}

TEST_F(RulerTasks, EveryExpectedAnswerIsInThePrompt) {
  for (RulerTask task : all_ruler_tasks()) {
    SCOPED_TRACE(ruler_task_name(task));
    auto t = make(task, 2048, 0.7, 5, completion_);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    ASSERT_FALSE(t->expected.empty());
    for (const std::string& e : t->expected) EXPECT_NE(t->prompt.text.find(e), std::string::npos) << e;
    EXPECT_EQ(t->max_new_tokens, ruler_task_max_new_tokens(task));
  }
}

// The asked needle's token offset over the prompt's tokens is its depth.
void expect_needle_depth(RulerTask task, int64_t length, const PromptFormat& format) {
  for (double depth : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    SCOPED_TRACE(std::string(ruler_task_name(task)) + " " + std::to_string(length) + " depth " + std::to_string(depth));
    auto t = make(task, length, depth, 21, format);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    const std::string& text = t->prompt.text;
    const std::string needle = task == RulerTask::Passkey ? "The pass key is " + t->expected[0]
                                                          : "is: " + t->expected[0] + ".";
    const size_t at = text.find(needle);
    ASSERT_NE(at, std::string::npos);
    const double share = (double)tokens_before(*smol()->tok, text, at) / (double)t->ids.size();
    EXPECT_NEAR(share, depth, 0.05);
  }
}

TEST_F(RulerTasks, NeedlesSitAtTheirDepth) {
  expect_needle_depth(RulerTask::NiahSingle, 1024, completion_);
  expect_needle_depth(RulerTask::NiahSingle, 4096, smol_chat());
  expect_needle_depth(RulerTask::NiahMultikey, 4096, completion_);
  expect_needle_depth(RulerTask::Passkey, 1024, completion_);
  expect_needle_depth(RulerTask::Passkey, 4096, smol_chat());
}

TEST_F(RulerTasks, ChatPromptsUseTheTemplateAndOpenTheAnswer) {
  auto t = make(RulerTask::NiahSingle, 1024, 0.5, 2, smol_chat());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const std::string& text = t->prompt.text;
  EXPECT_EQ(text.rfind("<|im_start|>system\n", 0), 0u);
  EXPECT_NE(text.find("<|im_end|>\n<|im_start|>user\nSome special magic numbers"), std::string::npos);
  const std::string opener = "provided text?<|im_end|>\n<|im_start|>assistant\nThe special magic number for ";
  EXPECT_NE(text.find(opener), std::string::npos);
  EXPECT_TRUE(text.ends_with(" mentioned in the provided text is")) << text.substr(text.size() - 60);
  const int32_t im_start = smol()->tok->find_token("<|im_start|>");
  ASSERT_GE(im_start, 0);
  EXPECT_EQ(std::count(t->ids.begin(), t->ids.end(), im_start), 3);  // system, user, assistant

  auto c = make(RulerTask::NiahSingle, 1024, 0.5, 2, completion_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->prompt.text.rfind("Some special magic numbers", 0), 0u);
  EXPECT_NE(c->prompt.text.find("provided text? The special magic number for"), std::string::npos);
  EXPECT_EQ(std::count(c->ids.begin(), c->ids.end(), im_start), 0);
}

TEST_F(RulerTasks, PasskeyInCompletionStyleIsTheValidatePrompt) {
  auto t = make(RulerTask::Passkey, 2048, 0.4, 8, completion_);
  ASSERT_TRUE(t.ok());
  const std::string want = passkey_text(*smol()->tok, 2048, 0.4, std::stoi(t->expected[0]));
  EXPECT_EQ(t->prompt.text, want);
}

TEST_F(RulerTasks, TooShortALengthOrAnUnknownTaskIsAClearError) {
  for (RulerTask task : all_ruler_tasks()) {
    auto t = make(task, 40, 0.5, 1, completion_);
    ASSERT_FALSE(t.ok()) << ruler_task_name(task);
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(std::string(ruler_task_name(task)) + " at length 40"), std::string::npos)
        << t.status().message();
  }
  auto bad = parse_ruler_task("niah");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown task 'niah' (tasks: niah_single,"), std::string::npos);
  for (RulerTask task : all_ruler_tasks()) EXPECT_EQ(parse_ruler_task(ruler_task_name(task)).value(), task);
}

TEST_F(RulerTasks, SuiteBuildsEveryInstanceSeededByWhatItIs) {
  RulerSuiteOptions opts;
  opts.tasks = {RulerTask::NiahSingle, RulerTask::CommonWords};
  opts.lengths = {512, 1024};
  opts.depths = 3;
  opts.trials = 2;
  const TaskContext ctx{*document(), *smol()->tok, completion_};
  auto all = build_suite(opts, ctx);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 2u * 3 + 2u * 2);  // depths for the needle, trials for cwe
  EXPECT_EQ((*all)[0].spec.depth, 0.0);
  EXPECT_EQ((*all)[1].spec.depth, 0.5);
  EXPECT_EQ((*all)[2].spec.depth, 1.0);
  EXPECT_EQ((*all)[5].spec.target_tokens, 1024);
  EXPECT_EQ((*all)[7].trial, 1);
  EXPECT_NE((*all)[6].prompt.text, (*all)[7].prompt.text);
  // The same instance whichever other tasks run with it.
  opts.tasks = {RulerTask::CommonWords};
  auto cwe = build_suite(opts, ctx);
  ASSERT_TRUE(cwe.ok());
  EXPECT_EQ((*cwe)[0].prompt.text, (*all)[6].prompt.text);
  EXPECT_EQ(even_depths(1), std::vector<double>{0.5});
  EXPECT_EQ(even_depths(5), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
}

TEST_F(RulerTasks, NeedleSpansAreTheNeedlesTokens) {
  const PromptFormat chat = smol_chat();
  auto t = make(RulerTask::NiahMultikey, 1024, 0.4, 5, chat);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ASSERT_EQ(t->needles.size(), 4u);  // the asked needle and 3 distractors
  const Tokenizer& tok = *smol()->tok;
  auto text = [&](int64_t a, int64_t b) {
    return tok.decode(std::vector<int32_t>(t->ids.begin() + a, t->ids.begin() + b));
  };
  const std::string value_end = t->expected[0] + ".";
  int asked = 0;
  for (const NeedleSpan& n : t->needles) {
    ASSERT_TRUE(0 <= n.first && n.first < n.end && n.end <= (int64_t)t->ids.size());
    const std::string whole = text(n.first, n.end);
    EXPECT_NE(whole.find("One of the special magic numbers for "), std::string::npos) << whole;
    EXPECT_EQ(text(n.first + 1, n.end).find("One of the special"), std::string::npos);  // no token to spare
    EXPECT_EQ(n.asked, whole.find(value_end) != std::string::npos) << whole;
    if (n.asked) EXPECT_EQ(text(n.first, n.end - 1).find(value_end), std::string::npos);
    asked += n.asked;
  }
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(t->needles[0].asked, true);  // inserts keep their order: the asked one first
}

}  // namespace
}  // namespace stride
