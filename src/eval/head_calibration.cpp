#include "eval/head_calibration.h"

#include <algorithm>
#include <cmath>

#include "attention/page_mass.h"
#include "attention/topk_selector.h"
#include "eval/observer_scope.h"

namespace stride {

double distant_mass_of_rows(const float* const* rows, int n_rows, int dim, float scale, const float* keys,
                            int64_t n_keys, int page_size, int64_t n_sink_pages, int64_t local_from_page) {
  const std::vector<double> mass = exact_page_mass(rows, n_rows, dim, scale, keys, n_keys, page_size);
  double distant = 0;
  for (int64_t L = n_sink_pages; L < std::min<int64_t>(local_from_page, (int64_t)mass.size()); ++L)
    distant += mass[(size_t)L];
  return distant;
}

namespace {

// Sums each decode query's distant mass per (layer, kv head).
class DistantMassObserver final : public SelectionObserver {
 public:
  DistantMassObserver(int n_layer, int n_kv) : n_kv_(n_kv), sum_((size_t)n_layer * n_kv, 0.0), count_(sum_.size(), 0) {}

  void on_selection(const SelectionView& v) override {
    if (v.n_q != 1 || v.layer < 0 || v.n_kv_heads != n_kv_ || !v.summaries) return;
    const int dim = v.summaries->head_dim();
    const int group = v.n_head / v.n_kv_heads;
    const float scale = v.scale > 0.f ? v.scale : 1.f / std::sqrt((float)dim);
    const int64_t n_pages = std::min<int64_t>((int64_t)v.page_table->size(), (v.kv_len + v.page_size - 1) / v.page_size);
    const TopkGeometry geo = topk_geometry(*v.policy, v.page_size, n_pages, v.q_pos0);
    const int64_t gp = geo.group_pages;
    sink_tokens_ = geo.n_sink * gp * v.page_size;
    window_tokens_ = (n_pages - geo.local_from * gp) * v.page_size;
    for (int h = 0; h < v.n_kv_heads; ++h) {
      std::vector<const float*> rows;  // the group's query heads
      for (int j = 0; j < group; ++j) rows.push_back(v.q + ((int64_t)h * group + j) * dim);
      const std::vector<float> keys = gather_head_keys(*v.pool, *v.page_table, v.kv_len, h);
      const size_t i = (size_t)v.layer * n_kv_ + h;
      sum_[i] += distant_mass_of_rows(rows.data(), group, dim, scale, keys.data(), v.kv_len, v.page_size,
                                      geo.n_sink * gp, geo.local_from * gp);
      ++count_[i];
    }
  }

  std::vector<double> means() const {
    std::vector<double> m(sum_.size(), -1.0);
    for (size_t i = 0; i < m.size(); ++i)
      if (count_[i] > 0) m[i] = sum_[i] / (double)count_[i];
    return m;
  }
  int64_t sink_tokens() const { return sink_tokens_; }
  int64_t window_tokens() const { return window_tokens_; }

 private:
  int n_kv_;
  std::vector<double> sum_;
  std::vector<int64_t> count_;
  int64_t sink_tokens_ = 0, window_tokens_ = 0;
};


}  // namespace

Expected<DistantMass> measure_distant_mass(Engine& engine, const std::vector<TaskInstance>& instances,
                                           int decode_steps, const std::function<void(size_t, size_t)>& on_prompt) {
  if (decode_steps < 1) return InvalidArgument("calibration needs at least one decode step per prompt");
  const ModelConfig& c = engine.model().config();
  DistantMassObserver observer(c.n_layer, c.n_head_kv);
  for (size_t n = 0; n < instances.size(); ++n) {
    ObserverScope scope(engine.kv(), &observer);
    GenerateOptions g;
    g.max_tokens = decode_steps + 1;  // the prompt's token, then the decode steps
    g.ignore_eos = true;
    g.sampling.temperature = 0.f;
    STRIDE_ASSIGN_OR_RETURN(GenerateResult r, engine.generate(instances[n].ids, g, {}));
    (void)r;
    if (on_prompt) on_prompt(n + 1, instances.size());
  }
  DistantMass out;
  out.n_layer = c.n_layer;
  out.n_kv_heads = c.n_head_kv;
  out.mass = observer.means();
  out.sink_tokens = observer.sink_tokens();
  out.window_tokens = observer.window_tokens();
  if (std::all_of(out.mass.begin(), out.mass.end(), [](double m) { return m < 0.0; }))
    return InvalidArgument("calibration observed no decode selection: run it with a top-k policy that selects on "
                           "decode steps (topk:sparsity=0,prefill=dense)");
  return out;
}

}  // namespace stride
