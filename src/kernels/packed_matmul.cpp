// Matmul over PackedMatrix weights: quantizes the activations, splits the
// matrices' row groups and tokens into work, and runs the tiles of the CPU
// path in use (packed_tiles.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/kernel_paths.h"
#include "kernels/matmul_impl.h"
#include "kernels/owned_steps.h"
#include "kernels/packed_matrix.h"
#include "kernels/packed_tiles.h"
#include "kernels/quant_act.h"

namespace stride {
namespace {

// The buffers behind packed::ActStage (packed_tiles.h).
struct ActStageBuffers {
  std::vector<float> d, s;
  std::vector<int32_t> hs, qs, ps;
  std::vector<uint8_t> xu;
  std::vector<int8_t> xt;
};

}  // namespace

packed::ActStage packed::act_stage(WorkerScratch& ws, int64_t n_blocks) {
  ActStageBuffers& b = ws.get<ActStageBuffers>();
  const size_t n = (size_t)(n_blocks * kActStageToks);
  if (b.d.size() < n) {
    b.d.resize(n);
    b.s.resize(n);
    b.hs.resize(n);
    b.qs.resize(n);
    b.xu.resize((size_t)(kActStageToks * xu_row_bytes(n_blocks)));
    b.xt.resize(n * 32);
    b.ps.resize(n / 2 + 1);
  }
  return {b.d.data(), b.s.data(), b.hs.data(), b.qs.data(), b.xu.data(), b.xt.data(), b.ps.data()};
}

namespace {

// A buffer that only grows, left uninitialised: only the parts a layout and
// path stage are written (xt: the AMX tiles only), and pages never written
// never become resident.
template <typename T>
class GrowBuffer {
 public:
  T* at_least(size_t n) {
    if (size_ < n) {
      data_ = std::make_unique_for_overwrite<T[]>(n);
      size_ = n;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<T[]> data_;
  size_t size_ = 0;
};

// The buffers behind packed::StagedActs (packed_tiles.h).
struct StagedActBuffers {
  GrowBuffer<float> d, s;
  GrowBuffer<int32_t> hs, qs, ps;
  GrowBuffer<uint8_t> xu;
  GrowBuffer<int8_t> xt;

  packed::StagedActs for_tokens(int64_t n_tok, int64_t n_blocks) {
    const int64_t tok_blocks = (n_tok + packed::kActStageToks - 1) / packed::kActStageToks;
    const size_t n = (size_t)(tok_blocks * packed::kActStageToks * n_blocks);
    const size_t xu_bytes = (size_t)(tok_blocks * packed::kActStageToks * packed::xu_row_bytes(n_blocks));
    return {n_blocks, d.at_least(n), s.at_least(n), hs.at_least(n), qs.at_least(n), xu.at_least(xu_bytes),
            xt.at_least(n * 32), ps.at_least(n / 2 + 1)};
  }
};

// Fewer tokens run the streaming tiles, which read no staged activations.
constexpr int64_t kStagedMinToks = 4;

// The decode step's granule of work: small enough that the threads finish
// within a few microseconds of each other, large enough that claiming it
// (one atomic add) costs nothing next to streaming it.
constexpr int64_t kStreamStepBytes = 64 << 10;

// The first kStreamPrefetchAhead bytes of groups [g0, g1) of w, asked for at
// once: the tile prefetches that far ahead of the block it computes, so a
// stream that starts cold would otherwise begin with demand misses, one
// block at a time.
void prefetch_stream_start(const PackedMatrix& w, int64_t g0, int64_t g1) {
  const char* start = (const char*)w.data.data() + g0 * w.group_bytes;
  const int64_t n = std::min<int64_t>(packed::kStreamPrefetchAhead, (g1 - g0) * w.group_bytes);
  for (int64_t off = 0; off < n; off += 64) __builtin_prefetch(start + off, 0, 2);  // prefetcht1, as the tile
}

// Decode: the groups of the n matrices (matrix i's are units [first[i],
// first[i + 1])) in steps of about kStreamStepBytes, each thread streaming
// its own contiguous share and then helping with the others' (owned_steps.h).
void stream_groups(packed::RunRangeFn run_range, const packed::Problem* probs, const int64_t* first, int n,
                   int64_t n_tok, ThreadPool& pool) {
  const int64_t units = first[n];
  const int64_t step_units = std::max<int64_t>(1, kStreamStepBytes / std::max<int64_t>(1, probs[0].w->group_bytes));
  OwnedSteps& steps = pool.scratch(0).get<OwnedSteps>();  // the caller's, set up before the dispatch
  steps.reset((units + step_units - 1) / step_units, pool.size());
  pool.run_chunks(steps.shares(), [&](int share, int, int worker) {
    int64_t prev = -2;
    for (int64_t s; (s = steps.claim(share)) >= 0; prev = s) {
      const int64_t u0 = s * step_units, u1 = std::min(units, u0 + step_units);
      bool cold = s != prev + 1;  // the tile's prefetches ran ahead into this step only after step s - 1
      for (int i = 0; i < n; ++i) {
        const int64_t g0 = std::max(u0, first[i]), g1 = std::min(u1, first[i + 1]);
        if (g0 >= g1) continue;
        if (cold || g0 > u0) prefetch_stream_start(*probs[i].w, g0 - first[i], g1 - first[i]);
        cold = false;
        run_range(probs[i], {g0 - first[i], g1 - first[i], 0, n_tok}, pool.scratch(worker));
      }
    }
  });
}

// A path's tiles and the staging of their activations (null: per chunk).
struct TilePath {
  packed::RunRangeFn run_range;
  packed::StageActsFn stage_acts;
};

void multi_on(const TilePath& path, const PackedMatrix* const* ws, float* const* ys, int n_mats, const float* x,
              int64_t n_tok, ThreadPool& pool) {
  if (n_tok <= 0 || n_mats <= 0) return;
  if (is_packable_float(ws[0]->type)) {  // float weights: the float matmul of the active path
    detail::matmul_float_packed_on(kernels::active_kernels(), *ws[0], x, ys[0], n_tok, pool);
    multi_on(path, ws + 1, ys + 1, n_mats - 1, x, n_tok, pool);
    return;
  }
  const int64_t n_in = ws[0]->n_in;
  const int64_t scale_blocks = act_scale_blocks(ws[0]->type);
  for (int i = 1; i < n_mats; ++i) {
    // Programmer error (each x row fits one row length), or matrices whose
    // activations take different scales: one dispatch each.
    if (ws[i]->n_in != n_in || is_packable_float(ws[i]->type) || act_scale_blocks(ws[i]->type) != scale_blocks) {
      for (int j = 0; j < n_mats; ++j) multi_on(path, ws + j, ys + j, 1, x, n_tok, pool);
      return;
    }
  }
  QuantizedActs& acts = pool.scratch(0).get<QuantizedActs>();  // the caller's
  quantize_acts_prepare(n_tok, n_in, acts, scale_blocks);
  // The matrices' groups, concatenated, are the work units of one dispatch.
  constexpr int kMaxMats = 4;
  packed::Problem probs[kMaxMats];
  int64_t first[kMaxMats + 1] = {0};
  const int n = std::min(n_mats, kMaxMats);
  // The activations are staged once, as they are quantized, for every chunk
  // and matrix of the dispatch: once per distinct weight type (its layout
  // decides what the tiles read).
  packed::StagedActs staged;
  const bool stage = path.stage_acts && n_tok >= kStagedMinToks;
  if (stage) staged = pool.scratch(0).get<StagedActBuffers>().for_tokens(n_tok, n_in / 32);
  bool stage_type[kMaxMats] = {};
  for (int i = 0; i < n; ++i) {
    probs[i] = packed::Problem{ws[i], &acts, ys[i], stage ? &staged : nullptr};
    first[i + 1] = first[i] + ws[i]->n_groups;
    stage_type[i] = stage && std::none_of(ws, ws + i, [&](const PackedMatrix* w) { return w->type == ws[i]->type; });
  }
  const auto quantize_rows = [&](int64_t t0, int64_t t1) {
    quantize_acts_rows(x, t0, t1, acts);
    for (int i = 0; i < n; ++i)
      if (stage_type[i]) path.stage_acts(probs[i], t0, t1);
  };
  if (n_tok >= 8 && pool.size() > 1) {
    // A few chunks per thread, claimed dynamically (see ThreadPool::run_chunks).
    const int chunks = (int)std::min<int64_t>(n_tok / 4, 4 * (int64_t)pool.size());
    pool.run_chunks(chunks, [&](int c, int nc) {
      const int64_t t0 = n_tok * c / nc, t1 = n_tok * (c + 1) / nc;
      if (t0 < t1) quantize_rows(t0, t1);
    });
  } else {
    quantize_rows(0, n_tok);
  }
  const packed::RunRangeFn run_range = path.run_range;
  const int64_t units = first[n];
  if (n_tok <= packed::kStreamMaxToks && pool.size() > 1) {
    stream_groups(run_range, probs, first, n, n_tok, pool);
  } else {
    pool.run_chunks(detail::work_chunks(units, n_tok, 1, pool.size()), [&](int ci, int nc, int worker) {
      const detail::WorkRange wr = detail::split_work(units, n_tok, 1, ci, nc);
      if (wr.r0 >= wr.r1 || wr.t0 >= wr.t1) return;
      for (int i = 0; i < n; ++i) {
        const int64_t g0 = std::max(wr.r0, first[i]), g1 = std::min(wr.r1, first[i + 1]);
        if (g0 < g1) run_range(probs[i], {g0 - first[i], g1 - first[i], wr.t0, wr.t1}, pool.scratch(worker));
      }
    });
  }
  // More matrices than one dispatch holds: the rest in further dispatches.
  if (n_mats > kMaxMats) multi_on(path, ws + kMaxMats, ys + kMaxMats, n_mats - kMaxMats, x, n_tok, pool);
}

}  // namespace

void matmul_packed_multi(const PackedMatrix* const* ws, float* const* ys, int n_mats,
                         const float* x, int64_t n_tok, ThreadPool& pool) {
  const kernels::KernelTable& k = kernels::active_kernels();
  multi_on({k.packed_tiles, k.packed_stage_acts}, ws, ys, n_mats, x, n_tok, pool);
}

void packed::matmul_packed_on(RunRangeFn run_range, const PackedMatrix& w, const float* x, float* y,
                              int64_t n_tok, ThreadPool& pool, StageActsFn stage_acts) {
  if (n_tok <= 0 || w.n_out <= 0) return;
  if (!packable(w.type)) {
    // Programmer error (pack_matrix produces only packable types).
    std::fill(y, y + n_tok * w.n_out, 0.0f);
    return;
  }
  const PackedMatrix* ws[1] = {&w};
  float* ys[1] = {y};
  multi_on({run_range, stage_acts}, ws, ys, 1, x, n_tok, pool);
}

void matmul_packed(const PackedMatrix& w, const float* x, float* y, int64_t n_tok,
                   ThreadPool& pool) {
  const kernels::KernelTable& k = kernels::active_kernels();
  packed::matmul_packed_on(k.packed_tiles, w, x, y, n_tok, pool, k.packed_stage_acts);
}

}  // namespace stride
