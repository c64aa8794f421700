#pragma once
// Why a top-k policy missed a needle: the prompt is run again up to the first
// decode step (where the answer starts and retrieval happens) with a
// selection observer, and for every top-k layer and kv head the needle's
// pages are placed in the selector's ranking (its Quest estimate) and in the
// ranking by exact attention mass. A needle page ranked within the budget by
// exact mass but not picked is the estimate's miss; one outside the exact
// top-budget too is the budget's (or the model's: it does not attend there).
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "eval/ruler_tasks.h"

namespace stride {

// A needle page in one (layer, kv head). Ranks are among the candidate pages
// (neither sink nor local window), best first; -1 for a fixed page.
struct NeedlePageTrace {
  int needle = 0;  // index into the instance's needles
  int64_t page = 0;
  bool fixed = false;
  bool selected = false;
  int64_t rank_estimate = -1;
  int64_t rank_exact = -1;
  float estimate = 0;  // the selector's score: max over the group's query heads of the Quest bound of q.k
  double mass = 0;     // exact softmax mass on the page, mean over the group's query heads
};

enum class NeedleOutcome { Read, EstimateMiss, BudgetMiss };
const char* needle_outcome_name(NeedleOutcome o);

struct HeadTrace {
  int layer = 0;
  int kv_head = 0;
  int64_t pages = 0;       // pages holding keys
  int64_t candidates = 0;  // pages ranked (not sink or window)
  int64_t budget = 0;      // candidates selected
  double selected_mass = 0;  // exact mass on every page read
  double oracle_mass = 0;    // exact mass on the fixed pages and the budget's best candidates by mass
  std::vector<NeedlePageTrace> needle_pages;
  std::vector<NeedleOutcome> outcomes;  // per asked needle, in needle order
};

struct NeedleTrace {
  int64_t query_position = 0;  // the traced decode step's query
  std::vector<int32_t> ids;    // the prompt and the traced step's token: what to rerun elsewhere
  int page_size = 0;
  std::vector<NeedleSpan> needles;
  std::vector<HeadTrace> heads;  // by layer, then kv head
  // Over (layer, kv head, asked needle): shares of each outcome.
  double read = 0, estimate_miss = 0, budget_miss = 0;
};

// One (layer, kv head) of an observed selection; exposed for tests.
// selected[L], fixed[L], estimate[L], mass[L] over the pages holding keys.
HeadTrace trace_head(int layer, int kv_head, const std::vector<uint8_t>& selected, const std::vector<uint8_t>& fixed,
                     const std::vector<float>& estimate, const std::vector<double>& mass,
                     const std::vector<NeedleSpan>& needles, int page_size);

// Runs the instance's prompt and one decode step on `engine` (greedy) with
// the observer set. Unsupported when no top-k layer selected pages
// on that step, or the instance has no located needles.
Expected<NeedleTrace> trace_needles(Engine& engine, const TaskInstance& instance);

}  // namespace stride
