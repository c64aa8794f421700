#include "model/moe_weights.h"

#include <string>

#include "model/pack_jobs.h"

namespace stride {

namespace {

// A 2-D tensor [rows, cols], or a Corrupt naming both shapes.
Status matrix(const ModelSource& src, const std::string& name, int64_t cols, int64_t rows, TensorView& out) {
  const TensorView* t = src.tensor(name);
  if (!t) return NotFound("model is missing tensor '" + name + "'");
  if (t->cols() != cols || t->rows() != rows || t->row_bytes() < 0) {
    return Corrupt("tensor '" + name + "' has shape [" + std::to_string(t->rows()) + ", " +
                   std::to_string(t->cols()) + "], expected [" + std::to_string(rows) + ", " +
                   std::to_string(cols) + "]");
  }
  out = *t;
  return Status::Ok();
}

// Expert e of a stacked tensor "<p><proj>_exps.weight", else "<p><proj>.<e>.weight".
Status expert_matrix(const ModelSource& src, const std::string& p, const std::string& proj, int n_expert, int e,
                     int64_t cols, int64_t rows, TensorView& out) {
  const std::string stacked = p + proj + "_exps.weight";
  const TensorView* t = src.tensor(stacked);
  if (!t) return matrix(src, p + proj + "." + std::to_string(e) + ".weight", cols, rows, out);
  if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != n_expert || t->ne[3] != 1 || t->row_bytes() < 0) {
    return Corrupt("tensor '" + stacked + "' has shape [" + std::to_string(t->ne[2]) + ", " +
                   std::to_string(t->ne[1]) + ", " + std::to_string(t->ne[0]) + "], expected [" +
                   std::to_string(n_expert) + ", " + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  out = expert_slice(*t, e);
  return Status::Ok();
}

Status f32_vector(const ModelSource& src, const std::string& name, int64_t n, TensorView& out) {
  STRIDE_RETURN_IF_ERROR(matrix(src, name, n, 1, out));
  if (out.type != DType::F32) return Unsupported("tensor '" + name + "' must be F32, found " + dtype_name(out.type));
  return Status::Ok();
}

// Expert e's bias: row e of "<p><proj>_exps.bias" [n_expert, n] (F32).
Status expert_bias(const ModelSource& src, const std::string& p, const std::string& proj, int n_expert, int e,
                   int64_t n, TensorView& out) {
  TensorView stacked;
  STRIDE_RETURN_IF_ERROR(matrix(src, p + proj + "_exps.bias", n, n_expert, stacked));
  if (stacked.type != DType::F32) {
    return Unsupported("tensor '" + stacked.name + "' must be F32, found " + dtype_name(stacked.type));
  }
  out = stacked;
  out.name = stacked.name + "[" + std::to_string(e) + "]";
  out.n_dims = 1;
  out.ne = {n, 1, 1, 1};
  out.nbytes = n * (int64_t)sizeof(float);
  out.data = stacked.data + e * out.nbytes;
  return Status::Ok();
}

}  // namespace

TensorView expert_slice(const TensorView& stacked, int64_t e) {
  TensorView v = stacked;
  v.name = stacked.name + "[" + std::to_string(e) + "]";
  v.n_dims = 2;
  v.ne = {stacked.ne[0], stacked.ne[1], 1, 1};
  v.nbytes = v.ne[1] * v.row_bytes();
  v.data = stacked.data + e * v.nbytes;
  return v;
}

Expected<MoeWeights> bind_moe_weights(const ModelSource& src, int layer) {
  const ModelConfig& c = src.config;
  const MoeConfig& m = c.moe;
  const int64_t E = c.n_embd, F = m.n_ff_expert;
  const std::string p = "blk." + std::to_string(layer) + ".";
  MoeWeights w;
  STRIDE_RETURN_IF_ERROR(matrix(src, p + "ffn_gate_inp.weight", E, m.n_expert, w.router));
  if (m.router_bias) STRIDE_RETURN_IF_ERROR(f32_vector(src, p + "ffn_gate_inp.bias", m.n_expert, w.router_bias));
  w.experts.resize((size_t)m.n_expert);
  for (int e = 0; e < m.n_expert; ++e) {
    ExpertWeights& x = w.experts[(size_t)e];
    STRIDE_RETURN_IF_ERROR(expert_matrix(src, p, "ffn_gate", m.n_expert, e, E, F, x.gate));
    STRIDE_RETURN_IF_ERROR(expert_matrix(src, p, "ffn_up", m.n_expert, e, E, F, x.up));
    STRIDE_RETURN_IF_ERROR(expert_matrix(src, p, "ffn_down", m.n_expert, e, F, E, x.down));
    if (m.expert_bias) {
      STRIDE_RETURN_IF_ERROR(expert_bias(src, p, "ffn_gate", m.n_expert, e, F, x.gate_bias));
      STRIDE_RETURN_IF_ERROR(expert_bias(src, p, "ffn_up", m.n_expert, e, F, x.up_bias));
      STRIDE_RETURN_IF_ERROR(expert_bias(src, p, "ffn_down", m.n_expert, e, E, x.down_bias));
    }
  }
  if (m.n_ff_shared > 0) {
    const int64_t S = m.n_ff_shared;
    STRIDE_RETURN_IF_ERROR(matrix(src, p + "ffn_gate_shexp.weight", E, S, w.shared.gate));
    STRIDE_RETURN_IF_ERROR(matrix(src, p + "ffn_up_shexp.weight", E, S, w.shared.up));
    STRIDE_RETURN_IF_ERROR(matrix(src, p + "ffn_down_shexp.weight", S, E, w.shared.down));
    STRIDE_RETURN_IF_ERROR(f32_vector(src, p + "ffn_gate_inp_shexp.weight", E, w.shared_gate));
  }
  return w;
}

void add_moe_pack_jobs(const MoeWeights& w, PackedMoe& out, std::vector<PackJob>& jobs) {
  out.experts.resize(w.experts.size());
  for (size_t e = 0; e < w.experts.size(); ++e) {
    const ExpertWeights& x = w.experts[e];
    PackedExpert& p = out.experts[e];
    jobs.push_back({&x.gate, &p.gate});
    jobs.push_back({&x.up, &p.up});
    jobs.push_back({&x.down, &p.down});
  }
  jobs.push_back({&w.shared.gate, &out.shared.gate});
  jobs.push_back({&w.shared.up, &out.shared.up});
  jobs.push_back({&w.shared.down, &out.shared.down});
}

Status pack_moe_weights(const MoeWeights& w, const ModelSource* src, PackedMoe& out) {
  std::vector<PackJob> jobs;
  add_moe_pack_jobs(w, out, jobs);
  return run_pack_jobs(std::move(jobs), src, nullptr);
}

}  // namespace stride
