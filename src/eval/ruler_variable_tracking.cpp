// Variable tracking: a chain "VAR AAAAA = 12345." then "VAR BBBBB = VAR
// AAAAA." ... spread through real text, in order, with a distractor chain of
// another value interleaved; the answer is every variable of the first chain.
#include <algorithm>
#include <string>
#include <vector>

#include "eval/ruler_random.h"
#include "eval/ruler_tasks.h"

namespace stride {

namespace {

constexpr size_t kHops = 4;  // assignments after the first: 5 variables per chain
constexpr int kNameLetters = 5;
constexpr int kValueDigits = 5;

// One chain's statements at increasing seeded depths, so it reads in order.
std::vector<HaystackInsert> chain(const std::vector<std::string>& names, const std::string& value,
                                  SplitMix64& rng) {
  std::vector<double> depths;
  for (size_t i = 0; i < names.size(); ++i) depths.push_back(rng.unit());
  std::sort(depths.begin(), depths.end());
  std::vector<HaystackInsert> out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string rhs = i == 0 ? value : "VAR " + names[i - 1];
    out.push_back({depths[i], "VAR " + names[i] + " = " + rhs + "."});
  }
  return out;
}

}  // namespace

Expected<TaskInstance> make_variable_tracking_task(const TaskSpec& spec, const TaskContext& ctx) {
  SplitMix64 rng(spec.seed);
  const size_t per_chain = kHops + 1;
  std::vector<std::string> names = distinct(rng, 2 * per_chain, [](SplitMix64& r) { return r.letters(kNameLetters); });
  std::vector<std::string> values = distinct(rng, 2, [](SplitMix64& r) { return r.digits(kValueDigits); });
  if (names.size() != 2 * per_chain || values.size() != 2) return Internal("could not draw distinct variables");
  const std::vector<std::string> asked(names.begin(), names.begin() + per_chain);
  const std::vector<std::string> other(names.begin() + per_chain, names.end());

  HaystackTaskText text;
  text.intro = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n";
  text.inserts = chain(asked, values[0], rng);
  for (HaystackInsert& s : chain(other, values[1], rng)) text.inserts.push_back(std::move(s));
  text.question = "Question: Find all variables that are assigned the value " + values[0] + " in the text above.";
  text.answer_prefix = "Answer: According to the chain(s) of variable assignment in the text above, " +
                       std::to_string(per_chain) + " variables are assigned the value " + values[0] +
                       ", they are:";
  text.expected = asked;
  return make_haystack_task(spec, ctx, std::move(text));
}

}  // namespace stride
