// Where an HF folder's chat template is read from, and malformed sources.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "gguf_test_util.h"
#include "loader/chat_template_source.h"
#include "loader/model_source.h"

namespace stride {
namespace {

using stride::test::TempDir;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string template_of(const std::string& dir) {
  ModelSource src;
  src.path = dir;
  auto t = model_chat_template(src);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : "<error>";
}

TEST(ChatTemplateSource, FolderWithoutTemplateHasNone) {
  TempDir dir;
  EXPECT_EQ(template_of(dir.path()), "");
  write_file(dir.path() + "/tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_EQ(template_of(dir.path()), "");
}

TEST(ChatTemplateSource, TokenizerConfigStringOrNamedList) {
  TempDir dir;
  write_file(dir.path() + "/tokenizer_config.json", R"({"chat_template": "{{ messages }}"})");
  EXPECT_EQ(template_of(dir.path()), "{{ messages }}");
  write_file(dir.path() + "/tokenizer_config.json",
             R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  EXPECT_EQ(template_of(dir.path()), "D");
  write_file(dir.path() + "/tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "R"}]})");
  EXPECT_EQ(template_of(dir.path()), "R");
}

TEST(ChatTemplateSource, JinjaFileComesFirst) {
  TempDir dir;
  write_file(dir.path() + "/tokenizer_config.json", R"({"chat_template": "old"})");
  write_file(dir.path() + "/chat_template.jinja", "new {{ x }}");
  EXPECT_EQ(template_of(dir.path()), "new {{ x }}");
}

TEST(ChatTemplateSource, MalformedSourcesAreErrors) {
  TempDir dir;
  ModelSource src;
  src.path = dir.path();
  for (const char* bad : {R"({"chat_template": 5})", R"({"chat_template": []})",
                          R"({"chat_template": [{"name": "default"}]})", "{not json"}) {
    write_file(dir.path() + "/tokenizer_config.json", bad);
    EXPECT_FALSE(model_chat_template(src).ok()) << bad;
  }
}

}  // namespace
}  // namespace stride
