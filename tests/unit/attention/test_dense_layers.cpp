// dense_layers=L (a top-k key): the grammar,
// the per-layer resolution, and a layer it names attending exactly as the
// scalar reference does over every key, while a layer it does not name selects.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention/attention_reference.h"
#include "attention/layer_policies.h"
#include "attention/policy.h"
#include "core/thread_pool.h"
#include "kv/kv_manager.h"
#include "../kv/cache_test_util.h"
#include "topk_check.h"

namespace stride {
namespace {

using namespace testing_util;

TEST(DenseLayers, ParsesPrintsAndRefuses) {
  auto p = parse_policy("sparse_prefill:dense_layers=3+0-1+1");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->dense_layers, (std::vector<int>{0, 1, 3}));
  auto rt = parse_policy(policy_to_string(*p));
  ASSERT_TRUE(rt.ok()) << policy_to_string(*p);
  EXPECT_EQ(*rt, *p);
  auto none = parse_policy("sparse_prefill:dense_layers=none");
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_TRUE(none->dense_layers.empty());
  EXPECT_TRUE(parse_policy("topk:sparsity=0.9")->dense_layers.empty()) << "plain topk keeps every layer selecting";
  for (const char* bad : {"sparse_prefill:dense_layers=", "sparse_prefill:dense_layers=2-1",
                          "sparse_prefill:dense_layers=x", "sparse_prefill:dense_layers=-1",
                          "sparse_prefill:dense_layers=0+", "topk:sparsity=0.9,prefill=dense,dense_layers=0"})
    EXPECT_FALSE(parse_policy(bad).ok()) << bad;
}

TEST(DenseLayers, ResolveMakesThemDenseUnderWindowsAndOverrides) {
  ModelConfig c;
  c.n_layer = 4;
  c.sliding_window = 8;
  c.layer_windowed = {0, 1, 0, 0};
  const PolicySpec user = *parse_policy("sparse_prefill:dense_layers=0-2");
  LayerPolicyOverrides o;
  ASSERT_TRUE(parse_layer_override("2=window:size=16", 4, o).ok());
  const std::vector<PolicySpec> l = resolve_layer_policies(c, user, o);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0], PolicySpec{});
  EXPECT_EQ(l[1].kind, PolicyKind::Window) << "a natively windowed layer keeps its window";
  EXPECT_EQ(l[2].kind, PolicyKind::Window) << "an override wins";
  EXPECT_EQ(l[3], user);
  EXPECT_TRUE(check_dense_layers(user, 4).ok());
  EXPECT_FALSE(check_dense_layers(user, 2).ok()) << "layer 2 is past a two-layer model";
}

// Two layers fed the same prompt in two chunks under sparse_prefill with
// dense_layers=0: layer 0 is dense's attention (the reference over every
// key), layer 1 reads a share of the pages and so differs from it.
TEST(DenseLayers, ANamedLayerAttendsAsTheReferenceOverEveryKey) {
  ModelConfig c;
  c.n_layer = 2;
  const PolicySpec user = *parse_policy("sparse_prefill:sparsity=0.9,dense_layers=0");
  Shape s;
  const int n = 640, first = 384;
  const Inputs in = random_inputs(s, n, 17);
  const AttentionParams params = params_for(s);
  auto kv = make_cache(s, resolve_layer_policies(c, user));
  ASSERT_TRUE(kv);
  StepDriver cache(*kv);
  auto seq = cache.add_sequence();
  ASSERT_TRUE(seq.ok());
  ThreadPool threads(2);
  const size_t kr = (size_t)s.n_kv * s.hd, qr = (size_t)s.n_head * s.hd;
  std::vector<std::vector<float>> out(2, std::vector<float>((size_t)n * qr, 0.f));  // [layer][n, n_head, hd]
  for (const int64_t pos : {int64_t{0}, int64_t{first}}) {
    const int len = pos == 0 ? first : n - first;
    ASSERT_TRUE(cache.reserve(*seq, len).ok());
    for (int layer = 0; layer < 2; ++layer) {
      cache.write(layer, *seq, in.k.data() + pos * kr, in.v.data() + pos * kr, len);
      cache.attend(layer, *seq, in.q.data() + pos * qr, len, params, out[layer].data() + pos * qr, threads);
    }
    cache.commit(*seq, len);
  }
  std::vector<float> want((size_t)n * qr);
  attention_reference(PolicySpec{}, params, s.n_kv, s.hd, s.hd, in.q.data(), n, 0, f16_round(in.k).data(),
                      f16_round(in.v).data(), n, want.data());
  EXPECT_LT(max_abs_diff(out[0], want), 2e-5f);
  EXPECT_GT(max_abs_diff(out[1], want), 1e-3f) << "the layer not named selects pages";
}

}  // namespace
}  // namespace stride
