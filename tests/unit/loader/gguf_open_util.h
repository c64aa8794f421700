#pragma once
// Opening a crafted GGUFSpec as a model, and asserting how it fails.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "gguf_test_util.h"
#include "loader/model_source.h"

namespace stride::test {

inline Expected<std::unique_ptr<ModelSource>> open_spec(const GGUFSpec& s) {
  TempDir dir;
  return open_model(dir.write("m.gguf", build_gguf(s)));
}

inline void expect_error(const GGUFSpec& s, StatusCode code, const std::string& needle) {
  auto m = open_spec(s);
  ASSERT_FALSE(m.ok()) << "expected failure mentioning: " << needle;
  EXPECT_EQ(m.status().code(), code) << m.status().to_string();
  EXPECT_NE(m.status().message().find(needle), std::string::npos)
      << "message '" << m.status().message() << "' lacks '" << needle << "'";
}

}  // namespace stride::test
