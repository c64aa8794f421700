#pragma once
// What a forward pass may do with the KV state of the step it runs, one layer
// at a time: write the layer's new keys and values, select a top-k layer's
// pages from the queries, and read the pool the page lists point into. The
// model sees this view, not the KV manager (kv_manager.h), which implements it.
#include <cstdint>

#include "attention/policy.h"
#include "core/status.h"
#include "kv/step_plan.h"
#include "kv/store/kv_pool.h"

namespace stride {

class ThreadPool;
class WorkerScratch;

class StepKv {
 public:
  using SeqId = int32_t;
  virtual ~StepKv() = default;

  virtual const PolicySpec& layer_policy(int layer) const = 0;
  virtual int head_dim_k() const = 0;
  // k: [n, n_kv_heads, head_dim_k], v: [n, n_kv_heads, head_dim_v] f32
  // for plan.steps[i]'s new positions; keys already carry RoPE.
  Status write(StepPlan& plan, int i, int layer, const float* k, const float* v) {
    const int n = i >= 0 && i < (int)plan.steps.size() ? plan.steps[(size_t)i].n : 0;
    return write_rows(plan, i, layer, 0, n, k, v);
  }
  // The same for rows [row0, row0 + rows) of the step only (k, v: their
  // first row), so a step's layer can be written a chunk at a time.
  virtual Status write_rows(StepPlan& plan, int i, int layer, int row0, int rows, const float* k,
                            const float* v) = 0;
  // Every query of plan.steps[i] has read `layer`: its pages no later query
  // sees may go back now rather than at commit (a step run layer by layer).
  virtual Status layer_done(StepPlan& plan, int i, int layer) = 0;
  // q: [n, n_head, head_dim_k]: fills a top-k layer's page lists (a no-op
  // on other layers and once selected); scale: the layer's softmax scale
  // (0: 1/sqrt(head_dim)); threads: the calling thread's pool (the caller
  // is its worker 0), which the selection may split its work over.
  virtual Status select(StepPlan& plan, int i, int layer, const float* q, int n_head, float scale,
                        ThreadPool& threads) = 0;
  // Whether select() on this layer changes shared state, so that calls for
  // different sequences must not run at once.
  virtual bool select_is_serial(int layer) const = 0;
  virtual const KvPool& pool() const = 0;
};

}  // namespace stride
