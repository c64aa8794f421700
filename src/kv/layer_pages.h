#pragma once
// One layer of one sequence in a step: the pages its queries read (the
// attention plan, for layers whose lists do not depend on the queries) and
// the pages it lets go once the step is committed (those no later query can
// see, by policy_keeps).
#include <cstdint>

#include "attention/policy.h"
#include "kv/page_table.h"
#include "kv/step_plan.h"

namespace stride {

class KvPool;
class PageManager;

// Plans lp for n_new tokens after `length` from the layer's page table, or
// marks it needs_selection (a top-k layer selecting from this step's queries).
// ends_prompt: the step is the prompt's last chunk (topk_selects).
void plan_static_layer(const PageTable& pt, const PolicySpec& policy, int page_size, int n_kv_heads, int64_t length,
                       int n_new, bool may_truncate, bool ends_prompt, LayerStepPlan& lp);
// The kernel's work partition and pages_present of a filled lp.pages.
void finish_layer_plan(const PageTable& pt, int page_size, int n_kv_heads, LayerStepPlan& lp);
// Frees every full page of a sequence of `length` tokens none of whose slots
// policy_keeps for the next query.
void release_unseen(PageTable& pt, const PolicySpec& policy, int page_size, int64_t length, const KvPool& pool,
                    PageManager& pages);

}  // namespace stride
