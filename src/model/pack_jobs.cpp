#include "model/pack_jobs.h"

#include <algorithm>
#include <numeric>

namespace stride {

// Once packed, the original's mapped pages are dropped, so the weights are not
// resident twice (the reference path and the embedding lookup read them back
// on demand).
Status pack_projection(const TensorView& t, const ModelSource* src, std::unique_ptr<PackedMatrix>& out) {
  if (!t.valid() || !packable(t)) return Status::Ok();
  RowsRead dropped;
  if (src) dropped = [src](const uint8_t* p, int64_t n) { src->drop_resident(p, (uint64_t)n); };
  Expected<PackedMatrix> pm = pack_matrix(t, dropped);
  if (!pm.ok()) return pm.status();
  out = std::make_unique<PackedMatrix>(std::move(pm.value()));
  return Status::Ok();
}

Status run_pack_jobs(std::vector<PackJob> jobs, const ModelSource* src, ThreadPool* pool) {
  // Largest first, so that the last matrices to start are small ones and the
  // threads finish together (the output head alone can be a quarter of a model).
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return jobs[a].view->nbytes > jobs[b].view->nbytes; });
  std::vector<Status> status(jobs.size());
  const auto run_one = [&](int i, int) {
    const PackJob& j = jobs[order[(size_t)i]];
    status[order[(size_t)i]] = pack_projection(*j.view, src, *j.out);
  };
  if (pool && pool->size() > 1 && jobs.size() > 1) {
    pool->run_chunks((int)jobs.size(), run_one);
  } else {
    for (size_t i = 0; i < jobs.size(); ++i) run_one((int)i, (int)jobs.size());
  }
  for (const Status& s : status)
    if (!s.ok()) return s;
  return Status::Ok();
}

}  // namespace stride
