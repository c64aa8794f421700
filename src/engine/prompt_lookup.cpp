#include "engine/prompt_lookup.h"

#include <algorithm>

namespace stride {

std::vector<int32_t> prompt_lookup_draft(std::span<const int32_t> context, const PromptLookupOptions& opts) {
  const int64_t size = (int64_t)context.size();
  const int lo = std::max(1, opts.ngram_min);
  if (opts.draft_max <= 0) return {};
  for (int n = opts.ngram_max; n >= lo; --n) {
    if (size < (int64_t)n + 1) continue;
    const int32_t* suffix = context.data() + size - n;
    // Latest first; an occurrence must end before the suffix itself does,
    // so at least one token follows it.
    for (int64_t i = size - n - 1; i >= 0; --i) {
      if (!std::equal(suffix, suffix + n, context.data() + i)) continue;
      const int64_t from = i + n;
      const int64_t to = std::min<int64_t>(size, from + opts.draft_max);
      return std::vector<int32_t>(context.begin() + from, context.begin() + to);
    }
  }
  return {};
}

}  // namespace stride
