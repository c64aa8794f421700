#pragma once
// RULER's scoring (string_match_all): the share of the expected strings that
// the model's output contains, ignoring ASCII case; a trial scores in [0, 1]
// and a task's accuracy is the mean over its trials.
#include <string>
#include <string_view>
#include <vector>

namespace stride {

// 1 when `expected` is empty (nothing was asked).
double score_answer(std::string_view output, const std::vector<std::string>& expected);

// Running mean of trial scores.
class AccuracyMean {
 public:
  void add(double score) {
    sum_ += score;
    ++n_;
  }
  double value() const { return n_ ? sum_ / (double)n_ : 0; }
  int count() const { return n_; }

 private:
  double sum_ = 0;
  int n_ = 0;
};

}  // namespace stride
