#pragma once
// The RULER-style tasks (Hsieh et al. 2024, "RULER: What's the Real Context
// Size of Your Long-Context Language Models?"): needle retrieval in real text,
// variable tracking, common/frequent word extraction, and passkey retrieval.
// Every instance is a pure function of (task, length, depth, seed) and the
// inputs (document, tokenizer, prompt format): same seed, same bytes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "eval/ruler_haystack.h"
#include "eval/ruler_prompt.h"
#include "tokenizer/tokenizer.h"

namespace stride {

enum class RulerTask {
  NiahSingle,      // one needle, asked by its key
  NiahMultikey,    // the asked needle among 3 with other keys
  NiahMultivalue,  // 4 needles of one key: every value
  NiahMultiquery,  // 4 needles of 4 keys, all asked
  VariableTracking,
  CommonWords,
  FrequentWords,
  Passkey,         // eval/passkey.h's prompt
};

const char* ruler_task_name(RulerTask task);
Expected<RulerTask> parse_ruler_task(std::string_view name);
// Every task, in the order above (the default of `stride eval --tasks`).
std::vector<RulerTask> all_ruler_tasks();
// Needle and passkey tasks run once per depth; the others once per trial.
bool ruler_task_uses_depth(RulerTask task);
// Greedy tokens an answer needs: a number, a few numbers, a list of words.
int ruler_task_max_new_tokens(RulerTask task);

struct TaskSpec {
  RulerTask task = RulerTask::NiahSingle;
  int64_t target_tokens = 4096;  // the whole prompt, template included
  double depth = 0.5;            // of the asked needle in the haystack (depth tasks)
  uint64_t seed = 1;
};

// Where an inserted sentence (a needle, a variable assignment) lies in the
// prompt's ids: tokens [first, end). asked: it holds an expected string.
struct NeedleSpan {
  int64_t first = 0;
  int64_t end = 0;
  bool asked = false;
};

struct TaskInstance {
  TaskSpec spec;
  RenderedPrompt prompt;
  std::vector<int32_t> ids;            // the prompt as the model sees it
  std::vector<std::string> expected;   // strings a right answer contains
  int max_new_tokens = 32;
  int trial = 0;                       // depth index or trial number within (task, length)
  std::vector<NeedleSpan> needles;     // haystack tasks' inserts, in insert order
};

// What every task reads: the document, the tokenizer that sizes the prompt,
// and how the prompt is put (completion or chat).
struct TaskContext {
  const Haystack& haystack;
  const Tokenizer& tokenizer;
  const PromptFormat& format;
};

// InvalidArgument (naming the task) when the length is below what it needs.
Expected<TaskInstance> make_task(const TaskSpec& spec, const TaskContext& ctx);

// Task builders (one file each); make_task dispatches to them.
Expected<TaskInstance> make_niah_task(const TaskSpec& spec, const TaskContext& ctx);
Expected<TaskInstance> make_variable_tracking_task(const TaskSpec& spec, const TaskContext& ctx);
Expected<TaskInstance> make_common_words_task(const TaskSpec& spec, const TaskContext& ctx);
Expected<TaskInstance> make_frequent_words_task(const TaskSpec& spec, const TaskContext& ctx);

// Shared by the tasks that hide sentences in the haystack (needles, vt): an
// intro, a run of real text from a seeded sentence with `inserts` at their
// depths, the question, then the answer prefix; sized to the spec's length.
struct HaystackTaskText {
  std::string intro;
  std::vector<HaystackInsert> inserts;
  std::string question;
  std::string answer_prefix;
  std::vector<std::string> expected;
};
Expected<TaskInstance> make_haystack_task(const TaskSpec& spec, const TaskContext& ctx, HaystackTaskText text);

// The token spans of `inserts` in ids (an insert not found is left out).
std::vector<NeedleSpan> locate_inserts(const Tokenizer& tok, const std::vector<int32_t>& ids,
                                       const std::vector<HaystackInsert>& inserts,
                                       const std::vector<std::string>& expected);

// Completes an instance from a fitted prompt (shared by every builder).
TaskInstance finish_task(const TaskSpec& spec, FittedPrompt fitted, std::vector<std::string> expected);

}  // namespace stride
