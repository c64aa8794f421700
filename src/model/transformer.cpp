#include "model/transformer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/ops_parallel.h"
#include "kernels/packed_matrix.h"
#include "model/batch_attention.h"
#include "model/rope_frequencies.h"

namespace stride {

namespace {

const float* f32(const TensorView& t) { return reinterpret_cast<const float*>(t.data); }

void add_bias(float* y, const TensorView& bias, int n_rows, int64_t dim, ThreadPool& pool) {
  if (!bias.valid()) return;
  add_rows(y, f32(bias), n_rows, dim, pool);
}

// Bytes a matmul reads: the packed copy when there is one.
int64_t weight_bytes(const TensorView& w, const PackedMatrix* packed) {
  return packed ? (int64_t)packed->data.size() : w.nbytes;
}

// A profiled matmul's name: op and its weights' distinct types ("ffn_gate_up Q4_K",
// "attn_qkv Q4_K/Q6_K"); empty, and never built, without a profile.
std::string weight_op(const OpProfile* profile, const char* op, std::initializer_list<DType> types) {
  if (!profile) return {};
  std::string name = op;
  char sep = ' ';
  for (auto it = types.begin(); it != types.end(); ++it) {
    if (std::find(types.begin(), it, *it) != it) continue;
    name += sep;
    name += dtype_name(*it);
    sep = '/';
  }
  return name;
}

}  // namespace

Expected<std::unique_ptr<Transformer>> Transformer::create(std::unique_ptr<ModelSource> source,
                                                         bool repack_weights, ThreadPool* pool, HeadType head_type) {
  if (!source) return InvalidArgument("no model source");
  std::unique_ptr<Transformer> t(new Transformer());
  STRIDE_ASSIGN_OR_RETURN(t->w_, bind_weights(*source));
  const TensorView& e = t->w_.tok_embd;
  const bool tied = e.valid() && t->w_.output.data == e.data;
  STRIDE_ASSIGN_OR_RETURN(const DType head, head_type_in_effect(t->w_.output.type, t->w_.output.cols(), head_type));
  const bool requantized = head != t->w_.output.type;
  if (requantized) {
    STRIDE_ASSIGN_OR_RETURN(t->head_bytes_, requantize_rows(t->w_.output, head, source.get(), pool));
    TensorView& out = t->w_.output;
    out.type = head;
    out.data = t->head_bytes_.data();
    out.nbytes = (int64_t)t->head_bytes_.size();
  }
  if (repack_weights) {
    STRIDE_ASSIGN_OR_RETURN(t->packed_, pack_weights(t->w_, source.get(), pool));
  }
  if (requantized && t->packed_.output) {
    // The packed copy is what runs: the unpacked bytes would only double the head.
    t->head_bytes_ = std::vector<uint8_t>();
    t->w_.output.data = nullptr;
  }
  // A tied table whose pages were dropped (packed or requantized head) is read with pread.
  if ((t->packed_.output || requantized) && tied && e.row_bytes() > 0) {
    // Reading row 0 shows the table lies in a file read_back reaches.
    t->embed_row_.resize((size_t)e.row_bytes());
    t->embed_by_read_ = source->read_back(e.data, (uint64_t)e.row_bytes(), t->embed_row_.data());
  }
  t->source_ = std::move(source);
  STRIDE_RETURN_IF_ERROR(t->set_rope_context(0));
  return t;
}

Status Transformer::set_rope_context(int64_t context) {
  const ModelConfig& c = config();
  const int rot = c.rope_dim > 0 ? c.rope_dim : c.head_dim;
  STRIDE_ASSIGN_OR_RETURN(rope_global_,
                          stride::rope_table(c.rope_scaling, c.rope_base, rot, c.rope_neox, c.n_ctx_train, context));
  STRIDE_ASSIGN_OR_RETURN(rope_local_, stride::rope_table(c.rope_scaling_local, c.rope_base_local, rot, c.rope_neox,
                                                          c.n_ctx_train, context));
  return Status::Ok();
}

Status Transformer::embed(const int32_t* ids, int n, float* x) {
  const TensorView& table = w_.tok_embd;
  if (!embed_by_read_) {
    if (!embed_rows(table, ids, n, config().embed_scale, x)) return InvalidArgument("token id outside the embedding table");
    return Status::Ok();
  }
  const int64_t rb = table.row_bytes();
  TensorView row = table;  // a one-row table over embed_row_
  row.ne[1] = 1;
  row.data = embed_row_.data();
  row.nbytes = rb;
  const int32_t first = 0;
  for (int i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= table.rows()) return InvalidArgument("token id outside the embedding table");
    if (!source_->read_back(table.row(ids[i]), (uint64_t)rb, embed_row_.data()))
      return IoError("cannot read embedding row " + std::to_string(ids[i]) + " from the model file");
    if (!embed_rows(row, &first, 1, config().embed_scale, x + (int64_t)i * table.cols()))
      return Internal("embedding row " + std::to_string(ids[i]) + " did not dequantize");
  }
  return Status::Ok();
}

void Transformer::linear(const TensorView& w, const PackedMatrix* packed, const float* x, float* y,
                         int n, ThreadPool& pool) {
  if (packed) {
    matmul_packed(*packed, x, y, n, pool);
  } else {
    matmul(w, x, y, n, pool);
  }
}

void Transformer::feed_forward(const LayerWeights& L, const PackedLayer& P, int n, ThreadPool& pool) {
  const ModelConfig& c = config();
  if (L.moe.active()) {
    OpTimer t(prof_, "ffn_moe");
    moe_ffn(c, L.moe, &P.moe, h_.data(), o_.data(), n, moe_, pool);
    return;
  }
  {
    OpTimer t(prof_, weight_op(prof_, "ffn_gate_up", {L.w_gate.type, L.w_up.type}),
              weight_bytes(L.w_gate, P.w_gate.get()) + weight_bytes(L.w_up, P.w_up.get()));
    if (P.w_gate && P.w_up) {
      const PackedMatrix* ws[2] = {P.w_gate.get(), P.w_up.get()};
      float* ys[2] = {gate_.data(), up_.data()};
      matmul_packed_multi(ws, ys, 2, h_.data(), n, pool);
    } else {
      linear(L.w_gate, P.w_gate.get(), h_.data(), gate_.data(), n, pool);  // [n, F]
      linear(L.w_up, P.w_up.get(), h_.data(), up_.data(), n, pool);        // [n, F]
    }
  }
  const int64_t count = (int64_t)n * c.n_ff;
  {
    OpTimer t(prof_, "ffn_act");
    if (c.act == Activation::GeluTanh) {
      gelu_tanh_mul(gate_.data(), up_.data(), gate_.data(), count, pool);
    } else {
      silu_mul(gate_.data(), up_.data(), gate_.data(), count, pool);
    }
  }
  OpTimer t(prof_, weight_op(prof_, "ffn_down", {L.w_down.type}), weight_bytes(L.w_down, P.w_down.get()));
  linear(L.w_down, P.w_down.get(), gate_.data(), o_.data(), n, pool);  // [n, E]
}

AttentionParams Transformer::attention_params(int layer) const {
  const ModelConfig& c = config();
  AttentionParams p;
  p.n_head = c.n_head;
  p.scale = c.attn_scale > 0 ? c.attn_scale : 1.0f / std::sqrt((float)c.head_dim);
  p.softcap = c.attn_logit_softcap;
  p.rope = &rope_table(layer);
  const TensorView& sinks = w_.layers[(size_t)layer].sinks;
  if (sinks.valid()) p.sink_logits = reinterpret_cast<const float*>(sinks.data);
  return p;
}

void Transformer::ensure_scratch(int n) {
  if (n <= scratch_tokens_) return;
  const ModelConfig& c = config();
  const size_t N = (size_t)n;
  pos_.resize(N);
  x_.resize(N * c.n_embd);
  h_.resize(N * c.n_embd);
  q_.resize(N * c.n_head * c.head_dim);
  k_.resize(N * c.n_head_kv * c.head_dim);
  v_.resize(N * c.n_head_kv * c.head_dim_v);
  att_.resize(N * c.n_head * c.head_dim_v);
  o_.resize(N * c.n_embd);
  gate_.resize(N * c.n_ff);
  up_.resize(N * c.n_ff);
  scratch_tokens_ = n;
}

Status Transformer::forward_batch(StepKv& kv, StepPlan& plan, ThreadPool& pool, ShardedAttention* sharded) {
  const ModelConfig& c = config();
  const SequenceStep* steps = plan.steps.data();
  const int n_steps = (int)plan.steps.size();
  int n = 0;
  for (int i = 0; i < n_steps; ++i) {
    if (steps[i].n <= 0) return InvalidArgument("forward: a sequence step has no tokens");
    for (int j = 0; j < steps[i].n; ++j) {
      const int32_t t = steps[i].tokens[j];
      if (t < 0 || t >= c.n_vocab) {
        return InvalidArgument("token id " + std::to_string(t) + " is outside the vocabulary (" +
                               std::to_string(c.n_vocab) + ")");
      }
    }
    n += steps[i].n;
  }
  if (n == 0) return InvalidArgument("forward: no tokens");
  if (n > max_chunk_) return InvalidArgument("forward: batch of " + std::to_string(n) + " tokens exceeds the chunk size");
  ensure_scratch(n);

  ids_.resize(n);
  for (int i = 0, row = 0; i < n_steps; ++i) {
    const int64_t pos0 = plan.seqs[(size_t)i].pos0;
    for (int j = 0; j < steps[i].n; ++j, ++row) {
      pos_[row] = (int32_t)(pos0 + j);
      ids_[row] = steps[i].tokens[j];
    }
  }

  prof_ = n == 1 ? op_profile_ : nullptr;
  const auto step_start = std::chrono::steady_clock::now();
  float* x = x_.data();  // [n, E] residual stream of all steps' tokens
  {
    OpTimer t(prof_, "embed");
    STRIDE_RETURN_IF_ERROR(embed(ids_.data(), n, x));
  }

  const int64_t qd = (int64_t)c.n_head * c.head_dim;
  const int64_t kd = (int64_t)c.n_head_kv * c.head_dim;
  const int64_t vd = (int64_t)c.n_head_kv * c.head_dim_v;
  const int64_t od = (int64_t)c.n_head * c.head_dim_v;
  for (int il = 0; il < c.n_layer; ++il) {
    const AttentionParams ap = attention_params(il);
    attention_inputs(il, x, n, pool);
    {
      // Attention is per sequence: each reads only its own pages.
      OpTimer t(prof_, "attention");
      STRIDE_RETURN_IF_ERROR(attend_batch(kv, plan, il, ap,
                                          BatchAttentionIO{q_.data(), k_.data(), v_.data(), att_.data(), qd, kd, vd, od},
                                          pool, sharded));
    }
    layer_tail(il, x, n, pool);
  }
  STRIDE_RETURN_IF_ERROR(output_head(steps, n_steps, x, pool));
  if (prof_) prof_->add_step(std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count());
  return Status::Ok();
}

Status Transformer::forward_layerwise(StepKv& kv, StepPlan& plan, ThreadPool& pool, ShardedAttention& sharded) {
  const ModelConfig& c = config();
  if (plan.steps.size() != 1) return InvalidArgument("forward: a layer-wise step has exactly one sequence");
  const SequenceStep& step = plan.steps[0];
  const int n = step.n;
  if (n <= 0) return InvalidArgument("forward: a sequence step has no tokens");
  for (int j = 0; j < n; ++j)
    if (step.tokens[j] < 0 || step.tokens[j] >= c.n_vocab)
      return InvalidArgument("token id " + std::to_string(step.tokens[j]) + " is outside the vocabulary (" +
                             std::to_string(c.n_vocab) + ")");
  const int chunk = std::min(n, max_chunk_);
  ensure_scratch(chunk);
  prof_ = nullptr;  // the op profile covers one-token steps
  const int64_t E = c.n_embd, V = c.n_vocab;
  const int64_t pos0 = plan.seqs[0].pos0;
  std::vector<float> resid((size_t)n * E);  // [n, E] the residual stream of every token, kept between layers
  STRIDE_RETURN_IF_ERROR(embed(step.tokens, n, resid.data()));
  auto set_positions = [&](int row0, int rows) {
    for (int j = 0; j < rows; ++j) pos_[j] = (int32_t)(pos0 + row0 + j);
  };
  for (int il = 0; il < c.n_layer; ++il) {
    const AttentionParams ap = attention_params(il);
    // Every chunk's keys first: the sharded attention gathers what the layer's queries read once.
    for (int row0 = 0; row0 < n; row0 += chunk) {
      const int rows = std::min(chunk, n - row0);
      set_positions(row0, rows);
      attention_inputs(il, resid.data() + row0 * E, rows, pool);
      STRIDE_RETURN_IF_ERROR(kv.write_rows(plan, 0, il, row0, rows, k_.data(), v_.data()));
    }
    STRIDE_RETURN_IF_ERROR(sharded.keys_written(il, ap, pool));
    // The queries again, chunk by chunk (recomputed rather than kept: [chunk] rows, not [n]).
    for (int row0 = 0; row0 < n; row0 += chunk) {
      const int rows = std::min(chunk, n - row0);
      float* x = resid.data() + row0 * E;
      set_positions(row0, rows);
      attention_inputs(il, x, rows, pool);
      STRIDE_RETURN_IF_ERROR(sharded.attend(il, ap, q_.data(), row0, rows, att_.data(), pool));
      layer_tail(il, x, rows, pool);
    }
    STRIDE_RETURN_IF_ERROR(kv.layer_done(plan, 0, il));
  }
  for (int row0 = 0; row0 < n; row0 += chunk) {
    const int rows = std::min(chunk, n - row0);
    const bool last = row0 + rows == n;
    SequenceStep part = step;  // the chunk's rows of the step's outputs
    part.n = rows;
    part.logits = !step.logits ? nullptr : step.all_logits ? step.logits + row0 * V : last ? step.logits : nullptr;
    part.hidden = step.hidden ? step.hidden + row0 * E : nullptr;
    STRIDE_RETURN_IF_ERROR(output_head(&part, 1, resid.data() + row0 * E, pool));
  }
  return Status::Ok();
}

void Transformer::attention_inputs(int il, const float* x, int n, ThreadPool& pool) {
  const ModelConfig& c = config();
  const LayerWeights& L = w_.layers[il];
  const PackedLayer& P = packed_.layers.empty() ? no_packed_ : packed_.layers[il];
  const int64_t E = c.n_embd;
  const int64_t qd = (int64_t)c.n_head * c.head_dim;
  const int64_t kd = (int64_t)c.n_head_kv * c.head_dim;
  const int64_t vd = (int64_t)c.n_head_kv * c.head_dim_v;
  {
    OpTimer t(prof_, "norm");
    rmsnorm(x, f32(L.attn_norm), h_.data(), n, E, c.norm_eps, pool);
  }
  {
    OpTimer t(prof_, weight_op(prof_, "attn_qkv", {L.wq.type, L.wk.type, L.wv.type}),
              weight_bytes(L.wq, P.wq.get()) + weight_bytes(L.wk, P.wk.get()) + weight_bytes(L.wv, P.wv.get()));
    if (P.wq && P.wk && P.wv) {  // one dispatch, activations quantized once
      const PackedMatrix* ws[3] = {P.wq.get(), P.wk.get(), P.wv.get()};
      float* ys[3] = {q_.data(), k_.data(), v_.data()};
      matmul_packed_multi(ws, ys, 3, h_.data(), n, pool);
    } else {
      linear(L.wq, P.wq.get(), h_.data(), q_.data(), n, pool);  // [n, n_head, hd]
      linear(L.wk, P.wk.get(), h_.data(), k_.data(), n, pool);  // [n, n_kv, hd]
      linear(L.wv, P.wv.get(), h_.data(), v_.data(), n, pool);  // [n, n_kv, hd_v]
    }
  }
  OpTimer t(prof_, "bias_qknorm_rope");
  add_bias(q_.data(), L.bq, n, qd, pool);
  add_bias(k_.data(), L.bk, n, kd, pool);
  add_bias(v_.data(), L.bv, n, vd, pool);
  if (c.qk_norm) {
    rmsnorm(q_.data(), f32(L.q_norm), q_.data(), (int64_t)n * c.n_head, c.head_dim, c.norm_eps, pool);
    rmsnorm(k_.data(), f32(L.k_norm), k_.data(), (int64_t)n * c.n_head_kv, c.head_dim, c.norm_eps, pool);
  }
  rope_qk(q_.data(), c.n_head, k_.data(), c.n_head_kv, pos_.data(), n, c.head_dim, *attention_params(il).rope, pool);
}

void Transformer::layer_tail(int il, float* x, int n, ThreadPool& pool) {
  const ModelConfig& c = config();
  const LayerWeights& L = w_.layers[il];
  const PackedLayer& P = packed_.layers.empty() ? no_packed_ : packed_.layers[il];
  const int64_t E = c.n_embd;
  {
    OpTimer t(prof_, weight_op(prof_, "attn_out", {L.wo.type}), weight_bytes(L.wo, P.wo.get()));
    linear(L.wo, P.wo.get(), att_.data(), o_.data(), n, pool);  // [n, E]
  }
  {
    OpTimer t(prof_, "residual_norm");
    add_bias(o_.data(), L.bo, n, E, pool);
    if (L.post_attn_norm.valid()) {
      rmsnorm_add(o_.data(), f32(L.post_attn_norm), x, n, E, c.norm_eps, pool);
    } else {
      add_inplace(x, o_.data(), (int64_t)n * E, pool);
    }
    // Feed-forward block.
    rmsnorm(x, f32(L.ffn_norm), h_.data(), n, E, c.norm_eps, pool);
  }
  feed_forward(L, P, n, pool);  // h_ -> o_ [n, E]
  OpTimer t(prof_, "residual_norm");
  if (L.post_ffn_norm.valid()) {
    rmsnorm_add(o_.data(), f32(L.post_ffn_norm), x, n, E, c.norm_eps, pool);
  } else {
    add_inplace(x, o_.data(), (int64_t)n * E, pool);
  }
}

Status Transformer::output_head(const SequenceStep* steps, int n_steps, const float* x, ThreadPool& pool) {
  const ModelConfig& c = config();
  const int64_t E = c.n_embd;
  for (int i = 0, row = 0; i < n_steps; row += steps[i].n, ++i) {
    if (steps[i].hidden) rmsnorm(x + (int64_t)row * E, f32(w_.output_norm), steps[i].hidden, steps[i].n, E, c.norm_eps, pool);
  }
  // Only the rows whose logits are wanted go through the output head:
  // gather them into h_ (contiguous), one matmul, then scatter.
  int rows = 0;
  OpTimer head_norm(prof_, "norm");
  for (int i = 0, row = 0; i < n_steps; row += steps[i].n, ++i) {
    if (!steps[i].logits) continue;
    const int first = steps[i].all_logits ? 0 : steps[i].n - 1;
    for (int j = first; j < steps[i].n; ++j, ++rows) {
      rmsnorm(x + (int64_t)(row + j) * E, f32(w_.output_norm), h_.data() + (int64_t)rows * E, 1, E, c.norm_eps);
    }
  }
  head_norm.stop();
  if (rows == 0) return Status::Ok();
  // One destination is written in place; several go through scratch.
  int wanting = 0;
  const SequenceStep* only = nullptr;
  for (int i = 0; i < n_steps; ++i) {
    if (steps[i].logits) {
      ++wanting;
      only = &steps[i];
    }
  }
  const int64_t V = c.n_vocab;
  std::vector<float> scratch;
  float* out = only->logits;
  if (wanting > 1) {
    scratch.resize((size_t)rows * V);
    out = scratch.data();
  }
  {
    OpTimer t(prof_, weight_op(prof_, "output_head", {w_.output.type}), weight_bytes(w_.output, packed_.output.get()));
    linear(w_.output, packed_.output.get(), h_.data(), out, rows, pool);  // [rows, n_vocab]
    if (c.final_logit_softcap > 0) softcap(out, (int64_t)rows * V, c.final_logit_softcap);
  }
  if (wanting > 1) {
    int64_t r = 0;
    for (int i = 0; i < n_steps; ++i) {
      if (!steps[i].logits) continue;
      const int64_t count = steps[i].all_logits ? steps[i].n : 1;
      std::memcpy(steps[i].logits, out + r * V, sizeof(float) * count * V);
      r += count;
    }
  }
  return Status::Ok();
}

}  // namespace stride
