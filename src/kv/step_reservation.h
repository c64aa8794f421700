#pragma once
// How many pool pages a step takes, decided before anything changes: the
// pages its new tokens need on every layer and, on top-k hot-set layers, the
// spares select() may restore into (TopkHotSet::spare_bound). prepare()
// reserves exactly this, so a step either fails up front or finds its pages.
#include <cstdint>
#include <span>

#include "core/status.h"
#include "kv/kv_config.h"
#include "kv/sequence_table.h"
#include "kv/step_plan.h"

namespace stride {

class TopkHotSet;

class StepReservation {
 public:
  // hot: null without a hot set; cfg and hot outlive this.
  StepReservation(const KvManagerConfig& cfg, const TopkHotSet* hot) : cfg_(cfg), hot_(hot) {}

  // InvalidArgument for an unknown sequence, an empty request, positions
  // past int32 or a sequence twice in the batch.
  Status check(const SequenceTable& seqs, std::span<const SequenceStep> batch) const;
  // Whether the hot set's tier may refuse a move this step (decided once for the batch).
  bool tier_may_refuse(const SequenceTable& seqs, std::span<const SequenceStep> batch) const;
  // New pages for n_new more tokens of s on every layer, and the hot-set spares.
  int64_t step_pages(const KvSequence& s, int n_new, bool tier_may_refuse) const;
  // The hot-set spares of one layer (0 elsewhere).
  int64_t spare_pages(const KvSequence& s, int layer, int n_new, bool tier_may_refuse) const;

 private:
  bool hot_layer(int layer) const;

  const KvManagerConfig& cfg_;
  const TopkHotSet* hot_;
};

}  // namespace stride
