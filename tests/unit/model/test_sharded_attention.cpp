// The model's sharded-attention hook (model/sharded_attention.h): with a hook
// the model writes each layer's keys and values, then hands the layer's
// queries to the hook instead of running the kernel on the step's lists. A
// hook that attends to the sequence's own pages with the kernel gives the
// bits of the model without one; the hook's error ends the step (a lost
// peer); a batch of two sequences and top-k layers are refused.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "attention/attention_kernel.h"
#include "engine/engine.h"
#include "tiny_engine.h"

namespace stride {
namespace {

// Attends to the sequence's own pages with the one-host kernel; fails at fail_at.
class OwnPagesAttention final : public ShardedAttention {
 public:
  OwnPagesAttention(const KvManager& kv, KvManager::SeqId seq, int fail_at = -1)
      : kv_(kv), seq_(seq), fail_at_(fail_at) {}
  Status keys_written(int layer, const AttentionParams&, ThreadPool&) override {
    layers_written.push_back(layer);
    return Status::Ok();
  }
  Status attend(int layer, const AttentionParams& params, const float* q, int row0, int n, float* out,
                ThreadPool& threads) override {
    calls.push_back({layer, n});
    if (layer == fail_at_) return IoError("a peer is gone");
    const int ps = kv_.config().page_size;
    const std::vector<int32_t>& table = *kv_.sequences().page_table(seq_, layer);
    for (const int32_t page : table)
      if (page >= 0) pages_read.insert(page);
    const int64_t q_pos0 = kv_.length(seq_) + row0;
    AttentionPlan plan = plan_attention(kv_.layer_policy(layer), table, ps, q_pos0 + n, q_pos0, n, default_q_block(n));
    plan.work = partition_work(plan, ps, kv_.config().n_kv_heads);
    return attention_paged(kv_.pool(), plan, kv_.layer_policy(layer), params, q, out, threads);
  }
  std::vector<std::pair<int, int>> calls;  // (layer, n) of every call
  std::vector<int> layers_written;         // keys_written's layers, in call order
  std::set<int32_t> pages_read;            // every pool page a layer's table named when attended

 private:
  const KvManager& kv_;
  KvManager::SeqId seq_;
  int fail_at_;
};

const std::vector<int32_t> kIds = {5, 9, 13, 2, 7, 7, 30, 11, 4, 19, 3, 8, 21, 4, 17, 6, 2};

Status step_with(Engine& e, std::span<const SequenceStep> steps, ShardedAttention& hook) {
  STRIDE_ASSIGN_OR_RETURN(StepPlan plan, e.kv().prepare(steps));
  STRIDE_RETURN_IF_ERROR(e.model().forward_batch(e.kv(), plan, e.pool(), &hook));
  return e.kv().commit(plan);
}

// kIds as one step of a new sequence, run layer by layer in chunks through
// an OwnPagesAttention hook: its logits of every position, and the hook.
struct LayerwiseRun {
  std::vector<float> logits;  // [n, n_vocab]
  std::unique_ptr<OwnPagesAttention> hook;
};

Expected<LayerwiseRun> layerwise_with(Engine& e, int chunk) {
  STRIDE_ASSIGN_OR_RETURN(const KvManager::SeqId seq, e.kv().add_sequence());
  LayerwiseRun r;
  r.logits.resize(kIds.size() * (size_t)e.config().n_vocab);
  const SequenceStep step{seq, kIds.data(), (int)kIds.size(), true, r.logits.data()};
  r.hook = std::make_unique<OwnPagesAttention>(e.kv(), seq);
  e.model().set_max_chunk(chunk);
  const Status st = [&]() -> Status {
    STRIDE_ASSIGN_OR_RETURN(StepPlan plan, e.kv().prepare(std::span<const SequenceStep>(&step, 1)));
    STRIDE_RETURN_IF_ERROR(e.model().forward_layerwise(e.kv(), plan, e.pool(), *r.hook));
    return e.kv().commit(plan);
  }();
  e.kv().remove_sequence(seq);
  STRIDE_RETURN_IF_ERROR(st);
  return r;
}

TEST(ShardedAttentionHook, TheKernelOnOwnPagesGivesTheBitsOfNoHook) {
  auto engine = testing_util::tiny_engine("llama", "dense");
  ASSERT_TRUE(engine);
  auto want = engine->score(kIds);
  ASSERT_TRUE(want.ok());
  const KvManager::SeqId seq = *engine->kv().add_sequence();
  std::vector<float> got(want->size());
  const SequenceStep step{seq, kIds.data(), (int)kIds.size(), true, got.data()};
  OwnPagesAttention hook(engine->kv(), seq);
  const Status st = step_with(*engine, std::span<const SequenceStep>(&step, 1), hook);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(got, *want);
  ASSERT_EQ((int)hook.calls.size(), engine->config().n_layer);
  for (int l = 0; l < engine->config().n_layer; ++l)
    EXPECT_EQ(hook.calls[(size_t)l], std::make_pair(l, (int)kIds.size()));
  engine->kv().remove_sequence(seq);
}

TEST(ShardedAttentionHook, ItsErrorEndsTheStep) {
  auto engine = testing_util::tiny_engine("llama", "dense");
  ASSERT_TRUE(engine);
  const KvManager::SeqId seq = *engine->kv().add_sequence();
  const SequenceStep step{seq, kIds.data(), (int)kIds.size(), false, nullptr};
  OwnPagesAttention hook(engine->kv(), seq, /*fail_at=*/1);
  const Status st = step_with(*engine, std::span<const SequenceStep>(&step, 1), hook);
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.to_string();
  EXPECT_EQ(hook.calls.size(), 2u);
  engine->kv().remove_sequence(seq);
}

// Layer by layer in chunks (Transformer::forward_layerwise): whatever the
// chunk, on or off page boundaries, the hook sees each layer's keys written
// once, then each chunk's queries, and the logits are the bits of the
// model's one-step forward without a hook.
TEST(ShardedAttentionHook, LayerByLayerInChunksGivesTheBitsOfNoHook) {
  for (const int chunk : {4, 5, 16, 64}) {
    auto engine = testing_util::tiny_engine("llama", "dense");
    ASSERT_TRUE(engine);
    auto want = engine->score(kIds);
    ASSERT_TRUE(want.ok());
    Expected<LayerwiseRun> run = layerwise_with(*engine, chunk);
    ASSERT_TRUE(run.ok()) << run.status().to_string();
    EXPECT_EQ(run->logits, *want) << "chunk " << chunk;
    const OwnPagesAttention& hook = *run->hook;
    const int n = (int)kIds.size(), chunks = (n + chunk - 1) / chunk, layers = engine->config().n_layer;
    ASSERT_EQ((int)hook.layers_written.size(), layers);
    ASSERT_EQ((int)hook.calls.size(), layers * chunks);
    for (int l = 0; l < layers; ++l) {
      EXPECT_EQ(hook.layers_written[(size_t)l], l);
      for (int c = 0; c < chunks; ++c)
        EXPECT_EQ(hook.calls[(size_t)(l * chunks + c)], std::make_pair(l, std::min(chunk, n - c * chunk)));
    }
  }
}

// Under a window, a layer done gives back the pages no later query sees
// (KvManager::layer_done) and the next layer writes into them, so the step
// touches far fewer pool pages than its layers times its pages, with the
// logits of the one-step forward.
TEST(ShardedAttentionHook, LayerByLayerUnderAWindowReusesTheLayersReleasedPages) {
  auto engine = testing_util::tiny_engine("llama", "window:size=6");
  ASSERT_TRUE(engine);
  auto want = engine->score(kIds);
  ASSERT_TRUE(want.ok());
  Expected<LayerwiseRun> run = layerwise_with(*engine, 5);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(run->logits, *want);
  // 17 tokens in pages of 4: 5 pages a layer, of which the window of 6
  // before position 17 keeps the last 2 (positions 12 and on); the other 3
  // go back once the layer is done and the next layer's first 3 new pages
  // are those.
  const int layers = engine->config().n_layer, pages = 5, kept = 2;
  EXPECT_EQ((int)run->hook->pages_read.size(), pages + (layers - 1) * kept);
}

// Which policies may shard is checked before any rank connects (dist/shard_topk.h).
TEST(ShardedAttentionHook, RefusesABatch) {
  auto engine = testing_util::tiny_engine("llama", "dense");
  ASSERT_TRUE(engine);
  const KvManager::SeqId a = *engine->kv().add_sequence(), b = *engine->kv().add_sequence();
  const SequenceStep steps[2] = {{a, kIds.data(), 4, false, nullptr}, {b, kIds.data(), 4, false, nullptr}};
  OwnPagesAttention hook(engine->kv(), a);
  EXPECT_EQ(step_with(*engine, std::span<const SequenceStep>(steps, 2), hook).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(hook.calls.empty());
}

}  // namespace
}  // namespace stride
