#include "eval/ruler_prompt.h"

#include <algorithm>
#include <cmath>

namespace stride {

Expected<RenderedPrompt> PromptFormat::render(const std::string& task_text, const std::string& answer_prefix) const {
  RenderedPrompt out;
  if (!render_user_turn_) {
    out.text = task_text + " " + answer_prefix;
    out.literal.push_back({0, out.text.size()});
    return out;
  }
  STRIDE_ASSIGN_OR_RETURN(out, render_user_turn_(task_text));
  out.literal.push_back({out.text.size(), out.text.size() + answer_prefix.size()});
  out.text += answer_prefix;
  return out;
}

std::vector<int32_t> encode_prompt(const Tokenizer& tok, const RenderedPrompt& prompt) {
  return tok.encode_with_literals(prompt.text, prompt.literal, tok.add_bos_default());
}

Expected<FittedPrompt> fit_prompt(const Tokenizer& tok, const PromptFormat& format, const PromptSizing& s) {
  auto build = [&](int64_t units) -> Expected<FittedPrompt> {
    FittedPrompt f;
    STRIDE_ASSIGN_OR_RETURN(f.prompt, format.render(s.task_text(units), s.answer_prefix));
    f.ids = encode_prompt(tok, f.prompt);
    f.units = units;
    return f;
  };
  STRIDE_ASSIGN_OR_RETURN(FittedPrompt best, build(0));
  const int64_t fixed = (int64_t)best.ids.size();
  const int64_t target = s.target_tokens;
  if (fixed > target)
    return InvalidArgument("needs at least " + std::to_string(fixed) + " prompt tokens, more than the length " +
                           std::to_string(target));
  const int64_t tolerance = std::max<int64_t>(2, target / 200);
  const int64_t max_units = std::max<int64_t>(1, s.max_units);
  // Secant steps through (0 units, fixed tokens) and the last try, kept
  // inside the bracket tokens(lo) <= target < tokens(hi); `best` is the
  // prompt nearest to the target so far (a unit is not split, so the
  // nearest may be a little over).
  auto distance = [&](int64_t tokens) { return tokens <= target ? 2 * (target - tokens) : 2 * (tokens - target) + 1; };
  int64_t lo = 0, hi = max_units + 1;
  int64_t units = std::clamp<int64_t>(s.units_for_tokens(target - fixed), 1, max_units);
  for (int step = 0; step < 16; ++step) {
    STRIDE_ASSIGN_OR_RETURN(FittedPrompt f, build(units));
    const int64_t got = (int64_t)f.ids.size();
    if (distance(got) < distance((int64_t)best.ids.size())) best = std::move(f);
    if (got <= target) {
      lo = units;
      if (target - got <= tolerance) break;
    } else {
      hi = units;
    }
    if (hi - lo <= 1) break;
    const double per_unit = std::max(1e-3, (double)(got - fixed) / (double)units);
    const int64_t next = units + (int64_t)std::floor((double)(target - got) / per_unit);
    units = std::clamp<int64_t>(next, lo + 1, hi - 1);
  }
  const int64_t got = (int64_t)best.ids.size();
  if (got < target - std::max<int64_t>(tolerance, target / 20))
    return InvalidArgument("reaches only " + std::to_string(got) + " of " + std::to_string(target) +
                           " prompt tokens (the text is too short)");
  if (got > target + std::max<int64_t>(tolerance, target / 20))
    return InvalidArgument("cannot come within 5% of " + std::to_string(target) + " prompt tokens (nearest: " +
                           std::to_string(got) + ")");
  return best;
}

}  // namespace stride
