#include <gtest/gtest.h>

#include "attention/layer_policies.h"

namespace stride {
namespace {

ModelConfig gemma_like() {
  ModelConfig c;
  c.n_layer = 6;
  c.sliding_window = 8;
  c.layer_windowed = {1, 1, 1, 1, 1, 0};
  return c;
}

TEST(LayerOverride, ParsesRangesAndSingleLayers) {
  LayerPolicyOverrides o;
  ASSERT_TRUE(parse_layer_override("0-1=dense", 6, o).ok());
  ASSERT_TRUE(parse_layer_override("5=rswa:sinks=4,window=16", 6, o).ok());
  ASSERT_EQ(o.by_layer.size(), 3u);
  EXPECT_EQ(o.by_layer[0].kind, PolicyKind::Dense);
  EXPECT_EQ(o.by_layer[1].kind, PolicyKind::Dense);
  EXPECT_EQ(o.by_layer[5].kind, PolicyKind::RSWA);
  EXPECT_EQ(o.by_layer[5].window, 16);
}

TEST(LayerOverride, RejectsBadText) {
  LayerPolicyOverrides o;
  EXPECT_FALSE(parse_layer_override("dense", 6, o).ok());
  EXPECT_FALSE(parse_layer_override("3-1=dense", 6, o).ok());
  EXPECT_FALSE(parse_layer_override("a-b=dense", 6, o).ok());
  EXPECT_FALSE(parse_layer_override("0-6=dense", 6, o).ok());  // past the last layer
  EXPECT_FALSE(parse_layer_override("0=window:size=0", 6, o).ok());
  EXPECT_TRUE(o.by_layer.empty());
}

TEST(LayerOverride, NativeWindowsUserPolicyAndOverrides) {
  const ModelConfig c = gemma_like();
  const PolicySpec user = *parse_policy("rswa:sinks=4,window=32");
  LayerPolicyOverrides o;
  ASSERT_TRUE(parse_layer_override("0=dense", 6, o).ok());
  const auto p = resolve_layer_policies(c, user, o);
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].kind, PolicyKind::Dense);   // override wins over the native window
  EXPECT_EQ(p[1].kind, PolicyKind::Window);  // native window kept
  EXPECT_EQ(p[1].window, 8);
  EXPECT_EQ(p[5].kind, PolicyKind::RSWA);    // the global layer takes the user policy
  EXPECT_EQ(p[5].window, 32);
}

}  // namespace
}  // namespace stride
