// The trial log of a resumable sweep: what is appended is found again after
// reopening, under exactly its (run, prompt, answer bound); a line cut short
// by a stop is skipped, and another model's log is refused.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "eval/trial_log.h"

namespace stride {
namespace {

std::string temp_path(const char* name) {
  const auto p = std::filesystem::temp_directory_path() / (std::string("stride-trial-log-") + name);
  std::filesystem::remove(p);
  return p.string();
}

RecordedTrial trial(const std::string& answer) {
  RecordedTrial t;
  t.answer = answer;
  t.new_tokens = 7;
  t.pages_read = 120;
  t.pages_present = 400;
  t.seconds = 2.5;
  return t;
}

TEST(TrialLog, AppendedTrialsAreFoundAfterReopening) {
  const std::string path = temp_path("reopen.jsonl");
  {
    auto log = TrialLog::open(path, "abc");
    ASSERT_TRUE(log.ok()) << log.status().message();
    EXPECT_EQ(log->size(), 0u);
    ASSERT_TRUE(log->append("dense;kv=f16", "p1", 32, trial("The number is 42.")).ok());
    ASSERT_TRUE(log->append("topk:sparsity=0.9;kv=f16", "p1", 32, trial("I do not know")).ok());
  }
  auto log = TrialLog::open(path, "abc");
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->size(), 2u);
  const RecordedTrial* dense = log->find("dense;kv=f16", "p1", 32);
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(dense->answer, "The number is 42.");
  EXPECT_EQ(dense->new_tokens, 7);
  EXPECT_EQ(dense->pages_read, 120);
  EXPECT_EQ(dense->pages_present, 400);
  EXPECT_DOUBLE_EQ(dense->seconds, 2.5);
  // Any key that differs is another trial.
  EXPECT_EQ(log->find("dense;kv=int8", "p1", 32), nullptr);
  EXPECT_EQ(log->find("dense;kv=f16", "p2", 32), nullptr);
  EXPECT_EQ(log->find("dense;kv=f16", "p1", 16), nullptr);
}

TEST(TrialLog, ALineCutShortIsSkippedAndTheNextAppendStartsAFreshLine) {
  const std::string path = temp_path("cut.jsonl");
  {
    auto log = TrialLog::open(path, "abc");
    ASSERT_TRUE(log->append("dense", "p1", 32, trial("one")).ok());
  }
  {
    std::ofstream f(path, std::ios::app);
    f << R"({"model_sha256":"abc","run":"dense","prompt_sha256":"p2","max_new_tok)";  // no newline: cut
  }
  {
    auto log = TrialLog::open(path, "abc");
    ASSERT_TRUE(log.ok());
    EXPECT_EQ(log->size(), 1u);
    EXPECT_EQ(log->skipped_lines(), 1);
    ASSERT_TRUE(log->append("dense", "p2", 32, trial("two")).ok());
  }
  auto log = TrialLog::open(path, "abc");
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->size(), 2u);
  ASSERT_NE(log->find("dense", "p2", 32), nullptr);
  EXPECT_EQ(log->find("dense", "p2", 32)->answer, "two");
}

TEST(TrialLog, AnotherModelsLogIsRefused) {
  const std::string path = temp_path("model.jsonl");
  {
    auto log = TrialLog::open(path, "abc");
    ASSERT_TRUE(log->append("dense", "p1", 32, trial("one")).ok());
  }
  auto log = TrialLog::open(path, "def");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("another model"), std::string::npos) << log.status().message();
}

TEST(TrialLog, AnUnwritableLogIsAnError) {
  auto log = TrialLog::open("/nonexistent-dir/x/log.jsonl", "abc");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace stride
