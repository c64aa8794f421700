// Needle-in-a-haystack tasks: "One of the special magic numbers for {key}
// is: {value}." hidden in real text. The asked needle sits at the spec's
// depth; the others (distractors, further values or keys) at seeded depths.
#include <string>
#include <vector>

#include "eval/ruler_random.h"
#include "eval/ruler_tasks.h"

namespace stride {

namespace {

constexpr const char* kIntro =
    "Some special magic numbers are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the numbers afterwards.\n";
constexpr int kValueDigits = 7;
constexpr size_t kNeedles = 4;  // multikey: the asked one and 3 distractors

std::string needle(const std::string& key, const std::string& value) {
  return "One of the special magic numbers for " + key + " is: " + value + ".";
}

// "a", "a and b", "a, b, c, and d".
std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) out += keys.size() == 2 ? " and " : (i + 1 == keys.size() ? ", and " : ", ");
    out += keys[i];
  }
  return out;
}

std::vector<HaystackInsert> place(const std::vector<std::string>& keys, const std::vector<std::string>& values,
                                  double depth, SplitMix64& rng) {
  std::vector<HaystackInsert> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string& key = keys.size() == 1 ? keys[0] : keys[i];
    out.push_back({i == 0 ? depth : rng.unit(), needle(key, values[i])});
  }
  return out;
}

}  // namespace

Expected<TaskInstance> make_niah_task(const TaskSpec& spec, const TaskContext& ctx) {
  SplitMix64 rng(spec.seed);
  const RulerTask task = spec.task;
  const size_t n_needles = task == RulerTask::NiahSingle ? 1 : kNeedles;
  const size_t n_keys = task == RulerTask::NiahMultivalue ? 1 : n_needles;
  // Multikey uses uuid-like keys, so the distractors' keys look alike.
  std::vector<std::string> keys = task == RulerTask::NiahMultikey
                                      ? distinct(rng, n_keys, uuid_key)
                                      : distinct(rng, n_keys, word_key);
  std::vector<std::string> values = distinct(rng, n_needles, [](SplitMix64& r) { return r.digits(kValueDigits); });
  if (keys.size() != n_keys || values.size() != n_needles) return Internal("could not draw distinct needles");

  HaystackTaskText text;
  text.intro = kIntro;
  text.inserts = place(keys, values, spec.depth, rng);
  if (task == RulerTask::NiahSingle || task == RulerTask::NiahMultikey) {
    text.question = "What is the special magic number for " + keys[0] + " mentioned in the provided text?";
    text.answer_prefix = "The special magic number for " + keys[0] + " mentioned in the provided text is";
    text.expected = {values[0]};
  } else {
    const std::string asked = task == RulerTask::NiahMultivalue ? keys[0] : join_keys(keys);
    text.question = "What are all the special magic numbers for " + asked + " mentioned in the provided text?";
    text.answer_prefix = "The special magic numbers for " + asked + " mentioned in the provided text are";
    text.expected = values;
  }
  return make_haystack_task(spec, ctx, std::move(text));
}

}  // namespace stride
