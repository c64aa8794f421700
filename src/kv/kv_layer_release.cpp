// KvManager::layer_done: a step run layer by layer (Transformer::
// forward_layerwise) hands a layer's pages that no later query sees back as
// soon as the layer is done, instead of at commit, and backs the next
// layer's new pages with them. The pool's memory is touched as pages are
// written, so a long step under a window touches about one layer of the
// step beyond what the policy keeps, not every layer of it.
#include <algorithm>
#include <string>
#include <vector>

#include "kv/kv_manager.h"
#include "kv/layer_pages.h"

namespace stride {

Status KvManager::layer_done(StepPlan& plan, int i, int layer) {
  if (plan.owner_ != this || i < 0 || i >= (int)plan.seqs.size() || layer < 0 || layer >= cfg_.n_layer)
    return InvalidArgument("KV manager: layer_done outside the step plan");
  const SequenceStep& step = plan.steps[(size_t)i];
  SeqStepPlan& sp = plan.seqs[(size_t)i];
  if (!seqs_.valid(step.seq) || seqs_[step.seq].length != sp.pos0)
    return InvalidArgument("KV manager: layer_done for a sequence that changed since prepare()");
  if (step.may_truncate) return Status::Ok();  // a tail that may be cut keeps its pages until commit
  KvSequence& s = seqs_[step.seq];
  const int ps = cfg_.page_size;
  const int64_t end = sp.pos0 + step.n;
  PageTable& done = s.layers[(size_t)layer].pages;
  const int64_t held_before = done.held;
  // Registered full pages stay cached when released, as at commit.
  release_unseen(done, cfg_.layer_policies[(size_t)layer], ps, end, *pool_, pages_);
  const int64_t released = held_before - done.held;
  if (released == 0 || layer + 1 == cfg_.n_layer) return Status::Ok();

  // The next layer's pages this step took in prepare() and has not written:
  // logical pages from the first one wholly after pos0 to the step's end.
  PageTable& next = s.layers[(size_t)layer + 1].pages;
  const int64_t first_new = (sp.pos0 + ps - 1) / ps, end_page = (end + ps - 1) / ps;
  const int32_t swap = (int32_t)std::min<int64_t>(released, std::max<int64_t>(0, end_page - first_new));
  if (swap == 0) return Status::Ok();
  std::vector<int32_t> got;  // the free list is LIFO: the pages just released come first
  STRIDE_RETURN_IF_ERROR(pages_.allocate(swap, got));
  for (int32_t j = 0; j < swap; ++j) {
    const int64_t L = first_new + j;
    pages_.release(next.table[(size_t)L]);
    next.unmap(L);
    next.map(L, got[(size_t)j]);
  }
  // The next layer's planned page lists named the pages it gave back.
  const bool ends_prompt = step.logits && !step.all_logits;
  sp.layers[(size_t)layer + 1] = LayerStepPlan{};
  plan_static_layer(next, cfg_.layer_policies[(size_t)layer + 1], ps, cfg_.n_kv_heads, sp.pos0, step.n,
                    step.may_truncate, ends_prompt, sp.layers[(size_t)layer + 1]);
  return Status::Ok();
}

}  // namespace stride
