#include "eval/ruler_tasks.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "eval/passkey.h"
#include "eval/ruler_random.h"

namespace stride {

namespace {

struct TaskInfo {
  RulerTask task;
  const char* name;
  bool uses_depth;
  int max_new_tokens;
};

constexpr std::array<TaskInfo, 8> kTasks = {{
    {RulerTask::NiahSingle, "niah_single", true, 32},
    {RulerTask::NiahMultikey, "niah_multikey", true, 32},
    {RulerTask::NiahMultivalue, "niah_multivalue", true, 64},
    {RulerTask::NiahMultiquery, "niah_multiquery", true, 64},
    {RulerTask::VariableTracking, "vt", false, 64},
    {RulerTask::CommonWords, "cwe", false, 128},
    {RulerTask::FrequentWords, "fwe", false, 64},
    {RulerTask::Passkey, "passkey", true, 16},
}};

const TaskInfo& info(RulerTask t) { return kTasks[(size_t)t]; }

// eval/passkey.h's prompt in this format. Its filler is sized for
// completion style, so a chat template's markup is taken off the target.
Expected<TaskInstance> make_passkey_task(const TaskSpec& spec, const TaskContext& ctx) {
  SplitMix64 rng(spec.seed);
  const int key = 10000 + (int)rng.below(90000);
  auto build = [&](int64_t target) -> Expected<FittedPrompt> {
    PasskeyPrompt p = passkey_prompt(ctx.tokenizer, target, spec.depth, key);
    FittedPrompt f;
    STRIDE_ASSIGN_OR_RETURN(f.prompt, ctx.format.render(p.task, p.answer_prefix.substr(1)));
    f.ids = encode_prompt(ctx.tokenizer, f.prompt);
    return f;
  };
  STRIDE_ASSIGN_OR_RETURN(FittedPrompt f, build(spec.target_tokens));
  const int64_t over = (int64_t)f.ids.size() - spec.target_tokens;
  if (over > 0) {
    STRIDE_ASSIGN_OR_RETURN(f, build(spec.target_tokens - over));
  }
  // The filler holds at least one unit: a prompt far over the target means
  // the length is too short for the task.
  if ((double)f.ids.size() > 1.05 * (double)spec.target_tokens)
    return InvalidArgument("needs at least " + std::to_string(f.ids.size()) + " prompt tokens, more than the length " +
                           std::to_string(spec.target_tokens));
  return finish_task(spec, std::move(f), {std::to_string(key)});
}

}  // namespace

const char* ruler_task_name(RulerTask task) { return info(task).name; }

Expected<RulerTask> parse_ruler_task(std::string_view name) {
  std::string known;
  for (const TaskInfo& t : kTasks) {
    if (name == t.name) return t.task;
    known += known.empty() ? t.name : std::string(", ") + t.name;
  }
  return InvalidArgument("unknown task '" + std::string(name) + "' (tasks: " + known + ")");
}

std::vector<RulerTask> all_ruler_tasks() {
  std::vector<RulerTask> out;
  for (const TaskInfo& t : kTasks) out.push_back(t.task);
  return out;
}

bool ruler_task_uses_depth(RulerTask task) { return info(task).uses_depth; }
int ruler_task_max_new_tokens(RulerTask task) { return info(task).max_new_tokens; }

TaskInstance finish_task(const TaskSpec& spec, FittedPrompt fitted, std::vector<std::string> expected) {
  TaskInstance t;
  t.spec = spec;
  t.prompt = std::move(fitted.prompt);
  t.ids = std::move(fitted.ids);
  t.expected = std::move(expected);
  t.max_new_tokens = ruler_task_max_new_tokens(spec.task);
  return t;
}

Expected<TaskInstance> make_haystack_task(const TaskSpec& spec, const TaskContext& ctx, HaystackTaskText text) {
  SplitMix64 rng(derive_seed(spec.seed, {0x4a7}));  // the cut, apart from the task's own draws
  const size_t first = (size_t)rng.below(ctx.haystack.sentence_count());
  PromptSizing sizing;
  sizing.target_tokens = spec.target_tokens;
  sizing.max_units = (int64_t)ctx.haystack.sentence_count();
  sizing.task_text = [&](int64_t n) {
    return text.intro + ctx.haystack.weave(first, (size_t)n, text.inserts).text + "\n" + text.question;
  };
  sizing.units_for_tokens = [&](int64_t tokens) { return ctx.haystack.sentences_for_tokens(first, tokens); };
  sizing.answer_prefix = text.answer_prefix;
  STRIDE_ASSIGN_OR_RETURN(FittedPrompt f, fit_prompt(ctx.tokenizer, ctx.format, sizing));
  TaskInstance t = finish_task(spec, std::move(f), std::move(text.expected));
  t.needles = locate_inserts(ctx.tokenizer, t.ids, text.inserts, t.expected);
  return t;
}

std::vector<NeedleSpan> locate_inserts(const Tokenizer& tok, const std::vector<int32_t>& ids,
                                       const std::vector<HaystackInsert>& inserts,
                                       const std::vector<std::string>& expected) {
  // The ids' text piece by piece, with each piece's first byte: an insert's
  // tokens are those whose bytes overlap its bytes.
  std::string text;
  std::vector<size_t> starts;
  for (const int32_t id : ids) {
    starts.push_back(text.size());
    text += tok.token_to_piece(id);
  }
  std::vector<NeedleSpan> out;
  for (const HaystackInsert& ins : inserts) {
    const size_t at = text.find(ins.text);
    if (ins.text.empty() || at == std::string::npos) continue;
    const size_t stop = at + ins.text.size();
    NeedleSpan span;
    span.first = (int64_t)(std::upper_bound(starts.begin(), starts.end(), at) - starts.begin()) - 1;
    span.end = (int64_t)(std::lower_bound(starts.begin(), starts.end(), stop) - starts.begin());
    for (const std::string& e : expected) span.asked = span.asked || ins.text.find(e) != std::string::npos;
    out.push_back(span);
  }
  return out;
}

Expected<TaskInstance> make_task(const TaskSpec& spec, const TaskContext& ctx) {
  if (spec.target_tokens <= 0) return InvalidArgument("lengths must be positive");
  Expected<TaskInstance> t = [&]() -> Expected<TaskInstance> {
    switch (spec.task) {
      case RulerTask::NiahSingle:
      case RulerTask::NiahMultikey:
      case RulerTask::NiahMultivalue:
      case RulerTask::NiahMultiquery: return make_niah_task(spec, ctx);
      case RulerTask::VariableTracking: return make_variable_tracking_task(spec, ctx);
      case RulerTask::CommonWords: return make_common_words_task(spec, ctx);
      case RulerTask::FrequentWords: return make_frequent_words_task(spec, ctx);
      case RulerTask::Passkey: return make_passkey_task(spec, ctx);
    }
    return InvalidArgument("unknown task");
  }();
  if (!t) {
    return Status(t.status().code(), std::string(ruler_task_name(spec.task)) + " at length " +
                                         std::to_string(spec.target_tokens) + ": " + t.status().message());
  }
  return t;
}

}  // namespace stride
