#pragma once
// Pooling of per-token hidden states into one embedding, as
// sentence-transformers and vLLM do it: the mean over the tokens, the last
// token's state, or the first ([CLS]) token's; optionally L2-normalized.
#include <cstdint>
#include <string>
#include <vector>

namespace stride {

enum class Pooling { Mean, Last, Cls };

const char* pooling_name(Pooling p);
// "mean", "last" or "cls"; false for anything else.
bool parse_pooling(const std::string& name, Pooling& out);

// Pools a sequence whose rows arrive in chunks (prefill steps): the mean is
// summed in double, so the chunking does not change the result.
class PooledRows {
 public:
  PooledRows(Pooling pooling, int64_t dim) : pooling_(pooling), dim_(dim) {}
  // rows: [n, dim], the next n rows of the sequence.
  void add(const float* rows, int64_t n);
  int64_t count() const { return count_; }
  void reset();
  // [dim]; L2-normalized when `normalize` (a zero vector stays zero).
  std::vector<float> result(bool normalize) const;

 private:
  Pooling pooling_;
  int64_t dim_;
  int64_t count_ = 0;
  std::vector<double> sum_;   // [dim] mean pooling
  std::vector<float> chosen_; // [dim] last or first row
};

// v /= ||v||₂ (unchanged when the norm is 0).
void l2_normalize(float* v, int64_t n);

}  // namespace stride
