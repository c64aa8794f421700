#include <gtest/gtest.h>

#include "../loader/gguf_test_util.h"
#include "core/sha256.h"

namespace stride {
namespace {

// Digests from FIPS 180-2 examples and `sha256sum` of the real model.
TEST(Sha256, KnownDigests) {
  test::TempDir dir;
  EXPECT_EQ(sha256_file(dir.write("e", "")).value(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_file(dir.write("abc", "abc")).value(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Longer than one read chunk (1 MiB): one million 'a's.
  EXPECT_EQ(sha256_file(dir.write("m", std::string(1000000, 'a'))).value(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha256_file(std::string(STRIDE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf")
                .value(),
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53");
  EXPECT_EQ(sha256_file(dir.path() + "/missing").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace stride
