#pragma once
// Fused projections as separate row-range views, so that the transformer
// binds (and repacks) q/k/v and gate/up the same way for every architecture.
#include "core/status.h"
#include "loader/model_source.h"

namespace stride {

// Phi-3 stores blk.N.attn_qkv.weight (q rows, then k, then v) and
// blk.N.ffn_up.weight with 2 * n_ff rows (gate rows, then up rows) and no
// ffn_gate; HF's qkv_proj / gate_up_proj map to those names. Each is
// replaced by views of its row ranges: rows are contiguous, so nothing is
// copied. Other tensors are left alone.
Status split_fused_tensors(ModelSource& src);

}  // namespace stride
