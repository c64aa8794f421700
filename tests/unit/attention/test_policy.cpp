#include "attention/policy.h"

#include <gtest/gtest.h>

#include "attention/layer_policies.h"

namespace stride {

TEST(Policy, ParsesGoodStrings) {
  auto d = parse_policy("dense");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, PolicyKind::Dense);

  auto w = parse_policy("window:size=4096");
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->kind, PolicyKind::Window);
  EXPECT_EQ(w->window, 4096);

  auto r = parse_policy("rswa:sinks=4,window=2044");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->kind, PolicyKind::RSWA);
  EXPECT_EQ(r->sinks, 4);
  EXPECT_EQ(r->window, 2044);
  EXPECT_EQ(r->positions, PositionMode::CacheRelative);  // default

  auto a = parse_policy("rswa:window=10,sinks=2,pos=abs");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->positions, PositionMode::Absolute);
  EXPECT_EQ(a->sinks, 2);
  EXPECT_EQ(a->window, 10);
  auto rel = parse_policy("rswa:sinks=1,window=3,pos=rel");
  ASSERT_TRUE(rel.ok());
  EXPECT_EQ(rel->positions, PositionMode::CacheRelative);
}

TEST(Policy, RoundTripsThroughString) {
  for (const char* s : {"dense", "window:size=512", "rswa:sinks=4,window=2044,pos=rel",
                        "rswa:sinks=8,window=100,pos=abs"}) {
    auto p = parse_policy(s);
    ASSERT_TRUE(p.ok()) << s;
    EXPECT_EQ(policy_to_string(*p), s);
    auto again = parse_policy(policy_to_string(*p));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *p);
  }
}

TEST(Policy, RejectsBadStrings) {
  const char* bad[] = {"",
                       "sparse",
                       "dense:size=4",
                       "window",
                       "window:",
                       "window:size=0",
                       "window:size=-3",
                       "window:size=abc",
                       "window:size=12x",
                       "window:width=10",
                       "window:size=10,size=20",
                       "rswa:sinks=4",
                       "rswa:window=4",
                       "rswa:sinks=0,window=4",
                       "rswa:sinks=4,window=8,pos=middle",
                       "rswa:sinks=4,window=8,foo=1",
                       "rswa:sinks=4,,window=8"};
  for (const char* s : bad) {
    auto p = parse_policy(s);
    EXPECT_FALSE(p.ok()) << "accepted: '" << s << "'";
    if (!p.ok()) {
      EXPECT_FALSE(p.status().message().empty());
    }
  }
  auto unknown = parse_policy("sparse");
  EXPECT_NE(unknown.status().message().find("unknown policy"), std::string::npos);
  auto key = parse_policy("window:width=10");
  EXPECT_NE(key.status().message().find("width"), std::string::npos);
}

TEST(Policy, TopkAndStridedParse) {
  EXPECT_TRUE(parse_policy("topk").ok());
  EXPECT_TRUE(parse_policy("strided:window=64,stride=4,globals=4").ok());
  for (const char* s : {"topk:k=2048", "strided:stride=64"}) EXPECT_FALSE(parse_policy(s).ok()) << s;
}

TEST(Policy, PredicateMatchesDefinitions) {
  const PolicySpec dense{};
  PolicySpec win;
  win.kind = PolicyKind::Window;
  win.window = 3;
  PolicySpec rswa;
  rswa.kind = PolicyKind::RSWA;
  rswa.window = 3;
  rswa.sinks = 2;
  EXPECT_TRUE(policy_attends(dense, 10, 0));
  EXPECT_FALSE(policy_attends(dense, 10, 11));
  EXPECT_TRUE(policy_attends(win, 10, 8));   // (7, 10]
  EXPECT_FALSE(policy_attends(win, 10, 7));
  EXPECT_TRUE(policy_attends(rswa, 10, 1));  // sink
  EXPECT_FALSE(policy_attends(rswa, 10, 2));
  EXPECT_TRUE(policy_attends(rswa, 10, 9));
  // Cache-relative shift: the query sits right after the window as seen by sinks.
  EXPECT_EQ(rswa_sink_shift(rswa, 10), 10 - 3 + 1 - 2);
  EXPECT_EQ(rswa_sink_shift(rswa, 3), 0);
  rswa.positions = PositionMode::Absolute;
  EXPECT_EQ(rswa_sink_shift(rswa, 10), 0);
}

TEST(LayerPolicies, WindowedLayersKeepTheirWindowOverridesWin) {
  ModelConfig cfg;
  cfg.n_layer = 6;
  cfg.sliding_window = 512;
  cfg.layer_windowed = {1, 1, 0, 1, 1, 0};
  auto user = parse_policy("rswa:sinks=4,window=2044");
  ASSERT_TRUE(user.ok());
  LayerPolicyOverrides ov;
  ov.by_layer[4] = PolicySpec{};  // dense
  ov.by_layer[5] = *parse_policy("window:size=64");
  const auto pols = resolve_layer_policies(cfg, *user, ov);
  ASSERT_EQ(pols.size(), 6u);
  for (int l : {0, 1, 3}) {
    EXPECT_EQ(pols[l].kind, PolicyKind::Window) << l;
    EXPECT_EQ(pols[l].window, 512);
  }
  EXPECT_EQ(pols[2], *user);
  EXPECT_EQ(pols[4].kind, PolicyKind::Dense);
  EXPECT_EQ(pols[5].window, 64);

  ModelConfig plain;
  plain.n_layer = 3;
  const auto all_user = resolve_layer_policies(plain, *user);
  for (const auto& p : all_user) EXPECT_EQ(p, *user);
}

}  // namespace stride
