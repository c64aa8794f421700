#include <gtest/gtest.h>

#include "loader/model_info.h"

namespace stride {
namespace {

TEST(ModelInfo, LayerRanges) {
  EXPECT_EQ(format_layer_ranges({0, 1, 2, 4, 6, 7}), "0-2,4,6-7");
  EXPECT_EQ(format_layer_ranges({5}), "5");
  EXPECT_EQ(format_layer_ranges({}), "");
}

}  // namespace
}  // namespace stride
