// Config precedence (file < env), defaults, and errors for unknown keys / bad values.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "serving/config.h"

using namespace stride::serving;

namespace {
std::string write_tmp(const std::string& text) {
  char name[] = "/tmp/stride-cfg-XXXXXX";
  const int fd = mkstemp(name);
  close(fd);
  std::ofstream(name) << text;
  return name;
}
}  // namespace

TEST(Config, DefaultsFromTheIssue) {
  auto c = load_config("", nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->max_context_length, 131072);
  EXPECT_DOUBLE_EQ(c->sparsity, 0.9);
  EXPECT_EQ(c->max_batch, 8);
  EXPECT_TRUE(c->cache_reuse);
  EXPECT_EQ(c->log_level, "INFO");
}

TEST(Config, FileThenEnvironment) {
  const std::string path = write_tmp("max_batch: 4\nallowlist: [\"10.0.0.0/8\", \"::1\"]\ncache_reuse: false\n");
  std::string e1 = "STRIDE_MAX_BATCH=12", e2 = "STRIDE_BUILD_DIR=ignored", e3 = "HOME=/x";
  char* env[] = {e1.data(), e2.data(), e3.data(), nullptr};
  auto c = load_config(path, env);
  std::remove(path.c_str());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->max_batch, 12);
  EXPECT_FALSE(c->cache_reuse);
  EXPECT_EQ(c->allowlist, (std::vector<std::string>{"10.0.0.0/8", "::1"}));
  ASSERT_TRUE(set_config_value(*c, "max_batch", "2").ok());  // a CLI flag wins
  EXPECT_EQ(c->max_batch, 2);
}

TEST(Config, ErrorsNameTheKey) {
  const std::string path = write_tmp("max_batch: 4\nmax_bacth: 8\n");
  auto c = load_config(path, nullptr);
  std::remove(path.c_str());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown key 'max_bacth'"), std::string::npos);
  ServeConfig d;
  EXPECT_FALSE(set_config_value(d, "max_batch", "0").ok());
  EXPECT_FALSE(set_config_value(d, "sparsity", "1.5").ok());
  EXPECT_FALSE(set_config_value(d, "port", "80a").ok());
  EXPECT_FALSE(set_config_value(d, "cache_reuse", "maybe").ok());
  EXPECT_FALSE(set_config_value(d, "log_level", "LOUD").ok());
  std::string bad = "STRIDE_MAX_QUEUE=lots";
  char* env[] = {bad.data(), nullptr};
  auto e = load_config("", env);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("max_queue"), std::string::npos);
}

TEST(Config, HeadTypeFromFileEnvironmentAndFlag) {
  EXPECT_EQ(ServeConfig{}.head_type, "file");
  const std::string path = write_tmp("head_type: q5_k\n");
  auto from_file = load_config(path, nullptr);
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_EQ(from_file->head_type, "q5_k");
  std::string e1 = "STRIDE_HEAD_TYPE=q4_k";
  char* env[] = {e1.data(), nullptr};
  auto c = load_config(path, env);
  std::remove(path.c_str());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->head_type, "q4_k");
  ASSERT_TRUE(set_config_value(*c, "head_type", "file").ok());
  EXPECT_EQ(c->head_type, "file");
  const stride::Status bad = set_config_value(*c, "head_type", "q3_k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("head_type"), std::string::npos);
  EXPECT_EQ(c->head_type, "file");
}
