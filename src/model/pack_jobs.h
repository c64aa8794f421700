#pragma once
// Load-time repacking of a model's projections, several at once: each job is
// one matrix, packed by one thread from start to end (pack_matrix drops the
// source pages as it reads them, so jobs in flight add only a few MiB each).
#include <memory>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/packed_matrix.h"
#include "loader/model_source.h"

namespace stride {

// A projection to repack and where its packed form goes.
struct PackJob {
  const TensorView* view = nullptr;
  std::unique_ptr<PackedMatrix>* out = nullptr;
};

// One projection repacked into `out`; out stays null for a weight without a
// packed layout. src: its mapped pages are dropped once packed.
Status pack_projection(const TensorView& t, const ModelSource* src, std::unique_ptr<PackedMatrix>& out);

// Runs every job, largest first, on the pool's threads (null: one after the
// other). The first failing job's status (in job order) is returned; the
// other jobs still run, and their outputs are left as they end.
Status run_pack_jobs(std::vector<PackJob> jobs, const ModelSource* src, ThreadPool* pool);

}  // namespace stride
