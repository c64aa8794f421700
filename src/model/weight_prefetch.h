#pragma once
// Touches every page of the mapped weights once at load time, so the first
// request does not pay for page faults; shows a progress bar on a terminal.
#include "loader/model_source.h"

namespace stride {

// Returns the bytes touched. `show_progress`: draw a bar on stderr.
int64_t prefetch_weights(const ModelSource& src, bool show_progress);

}  // namespace stride
