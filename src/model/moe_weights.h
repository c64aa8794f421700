#pragma once
// A mixture-of-experts layer's weights: the router, one SwiGLU block per
// expert, and the optional shared expert (Qwen2-MoE). Each expert is a 2-D
// view into the file's 3-D tensor [n_expert, rows, cols] (or its own tensor
// in per-expert files), so experts stay in the file's quantized type.
#include <memory>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/packed_matrix.h"
#include "loader/model_source.h"
#include "model/pack_jobs.h"

namespace stride {

struct ExpertWeights {
  TensorView gate, up;  // [n_ff_expert, n_embd]
  TensorView down;      // [n_embd, n_ff_expert]
  TensorView gate_bias, up_bias, down_bias;  // optional (gpt-oss): [n_ff_expert], [n_ff_expert], [n_embd]
};

struct MoeWeights {
  TensorView router;                   // [n_expert, n_embd]
  TensorView router_bias;              // optional [n_expert] (gpt-oss)
  std::vector<ExpertWeights> experts;  // [n_expert]
  ExpertWeights shared;                // optional, hidden size n_ff_shared
  TensorView shared_gate;              // optional [n_embd]: sigmoid(x · g) scales the shared expert

  bool active() const { return router.valid(); }
  bool has_shared() const { return shared.gate.valid(); }
};

// Repacked copies for the fast kernels; null where a type has no packed layout.
struct PackedExpert {
  std::unique_ptr<PackedMatrix> gate, up, down;
};

struct PackedMoe {
  std::vector<PackedExpert> experts;  // [n_expert] or empty
  PackedExpert shared;
};

// Binds layer `layer`'s MoE tensors (GGUF names "blk.N.ffn_gate_exps.weight",
// ... or per expert "blk.N.ffn_gate.E.weight"), checking their shapes.
Expected<MoeWeights> bind_moe_weights(const ModelSource& src, int layer);

// Expert e's 2-D slice of a 3-D tensor [n_expert, rows, cols] (ggml ne {cols, rows, n_expert}).
TensorView expert_slice(const TensorView& stacked, int64_t e);

// The jobs that pack w's experts (and shared expert) into out (sized here).
void add_moe_pack_jobs(const MoeWeights& w, PackedMoe& out, std::vector<PackJob>& jobs);
// All of them, one after the other. src: where the weights are mapped from
// (their pages are dropped once packed).
Status pack_moe_weights(const MoeWeights& w, const ModelSource* src, PackedMoe& out);

}  // namespace stride
