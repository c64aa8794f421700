#include "kv/step_reservation.h"

#include <algorithm>
#include <limits>
#include <string>

#include "kv/topk_hot_set.h"

namespace stride {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

bool StepReservation::hot_layer(int layer) const {
  return hot_ && TopkHotSet::applies(cfg_.layer_policies[(size_t)layer]);
}

Status StepReservation::check(const SequenceTable& seqs, std::span<const SequenceStep> batch) const {
  for (size_t i = 0; i < batch.size(); ++i) {
    const SequenceStep& r = batch[i];
    if (!seqs.valid(r.seq)) return InvalidArgument("KV manager: unknown sequence " + std::to_string(r.seq));
    if (r.n <= 0) return InvalidArgument("KV manager: a step request has no tokens");
    if (seqs[r.seq].length + r.n > std::numeric_limits<int32_t>::max())
      return InvalidArgument("KV manager: positions beyond int32 range");
    for (size_t j = 0; j < i; ++j)
      if (batch[j].seq == r.seq)
        return InvalidArgument("KV manager: sequence " + std::to_string(r.seq) + " twice in one step");
  }
  return Status::Ok();
}

int64_t StepReservation::spare_pages(const KvSequence& s, int layer, int n_new, bool tier_may_refuse) const {
  if (!hot_layer(layer)) return 0;
  const KvLayerState& ls = s.layers[(size_t)layer];
  return hot_->spare_bound(cfg_.layer_policies[(size_t)layer], ls.pages, ls.hot, s.length, n_new, tier_may_refuse);
}

// At most every page the batch's hot-set layers hold could need a slot.
bool StepReservation::tier_may_refuse(const SequenceTable& seqs, std::span<const SequenceStep> batch) const {
  if (!hot_) return false;
  int64_t could_need = 0;
  for (const SequenceStep& r : batch) {
    const KvSequence& s = seqs[r.seq];
    for (int l = 0; l < cfg_.n_layer; ++l)
      if (hot_layer(l)) could_need += hot_->held_after_reserve(s.layers[(size_t)l].pages, s.length, r.n);
  }
  return hot_->tier_may_refuse(could_need);
}

int64_t StepReservation::step_pages(const KvSequence& s, int n_new, bool tier_may_refuse) const {
  const int64_t n_logical = ceil_div(s.length + n_new, cfg_.page_size);
  int64_t total = 0;
  for (int l = 0; l < cfg_.n_layer; ++l)
    total += std::max<int64_t>(0, n_logical - s.layers[(size_t)l].pages.size()) +
             spare_pages(s, l, n_new, tier_may_refuse);
  return total;
}

}  // namespace stride
