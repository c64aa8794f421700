#include "loader/fused_tensors.h"

#include <initializer_list>
#include <string>
#include <utility>

namespace stride {

namespace {

// Rows [first, first + n) of a 2-D tensor.
TensorView row_range(const TensorView& t, int64_t first, int64_t n, const std::string& name) {
  TensorView v = t;
  v.name = name;
  v.n_dims = 2;
  v.ne = {t.ne[0], n, 1, 1};
  v.data = t.row(first);
  v.nbytes = n * t.row_bytes();
  return v;
}

// The fused tensor `name`, checked to hold `rows` rows of n_embd columns.
Expected<TensorView> fused(const ModelSource& src, const std::string& name, int64_t rows) {
  const TensorView* t = src.tensor(name);
  const int64_t E = src.config.n_embd;
  if (t->n_dims != 2 || t->cols() != E || t->rows() != rows || t->row_bytes() <= 0) {
    return Corrupt(src.format + ": fused tensor '" + name + "' has shape [" + std::to_string(t->rows()) + ", " +
                   std::to_string(t->cols()) + "], expected [" + std::to_string(rows) + ", " + std::to_string(E) +
                   "]");
  }
  return *t;
}

Status split(ModelSource& src, const std::string& name, const TensorView& whole,
             std::initializer_list<std::pair<const char*, int64_t>> parts, const std::string& prefix) {
  src.remove_tensor(name);  // `whole` is a copy; the up half reuses the fused up's name
  int64_t first = 0;
  for (const auto& [part, rows] : parts) {
    const std::string part_name = prefix + part;
    if (src.tensor(part_name)) {
      return Corrupt(src.format + ": '" + part_name + "' is present beside the fused '" + name + "'");
    }
    src.add_tensor(row_range(whole, first, rows, part_name));
    first += rows;
  }
  return Status::Ok();
}

}  // namespace

Status split_fused_tensors(ModelSource& src) {
  const ModelConfig& c = src.config;
  const int64_t q_dim = (int64_t)c.n_head * c.head_dim;
  const int64_t k_dim = (int64_t)c.n_head_kv * c.head_dim;
  const int64_t v_dim = (int64_t)c.n_head_kv * c.head_dim_v;
  const int64_t F = c.n_ff;
  for (int il = 0; il < c.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const std::string qkv = p + "attn_qkv.weight";
    if (src.tensor(qkv)) {
      STRIDE_ASSIGN_OR_RETURN(const TensorView whole, fused(src, qkv, q_dim + k_dim + v_dim));
      STRIDE_RETURN_IF_ERROR(split(
          src, qkv, whole, {{"attn_q.weight", q_dim}, {"attn_k.weight", k_dim}, {"attn_v.weight", v_dim}}, p));
    }
    const std::string up = p + "ffn_up.weight";
    const TensorView* u = src.tensor(up);
    if (u && !src.tensor(p + "ffn_gate.weight") && u->rows() == 2 * F) {
      STRIDE_ASSIGN_OR_RETURN(const TensorView whole, fused(src, up, 2 * F));
      STRIDE_RETURN_IF_ERROR(split(src, up, whole, {{"ffn_gate.weight", F}, {"ffn_up.weight", F}}, p));
    }
  }
  return Status::Ok();
}

}  // namespace stride
