#include "kernels/pooling.h"

#include <cmath>

namespace stride {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean: return "mean";
    case Pooling::Last: return "last";
    case Pooling::Cls: return "cls";
  }
  return "mean";
}

bool parse_pooling(const std::string& name, Pooling& out) {
  if (name == "mean") out = Pooling::Mean;
  else if (name == "last") out = Pooling::Last;
  else if (name == "cls") out = Pooling::Cls;
  else return false;
  return true;
}

void PooledRows::add(const float* rows, int64_t n) {
  if (n <= 0) return;
  if (pooling_ == Pooling::Mean) {
    if (sum_.empty()) sum_.assign((size_t)dim_, 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < dim_; ++i) sum_[(size_t)i] += rows[r * dim_ + i];
  } else if (pooling_ == Pooling::Last) {
    chosen_.assign(rows + (n - 1) * dim_, rows + n * dim_);
  } else if (count_ == 0) {
    chosen_.assign(rows, rows + dim_);
  }
  count_ += n;
}

void PooledRows::reset() {
  count_ = 0;
  sum_.clear();
  chosen_.clear();
}

std::vector<float> PooledRows::result(bool normalize) const {
  std::vector<float> out((size_t)dim_, 0.f);
  if (count_ == 0) return out;
  if (pooling_ == Pooling::Mean) {
    for (int64_t i = 0; i < dim_; ++i) out[(size_t)i] = (float)(sum_[(size_t)i] / (double)count_);
  } else {
    out = chosen_;
  }
  if (normalize) l2_normalize(out.data(), dim_);
  return out;
}

void l2_normalize(float* v, int64_t n) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += (double)v[i] * v[i];
  if (ss <= 0.0) return;
  const double inv = 1.0 / std::sqrt(ss);
  for (int64_t i = 0; i < n; ++i) v[i] = (float)(v[i] * inv);
}

}  // namespace stride
