#pragma once
// The BERT encoder's forward pass (post-LayerNorm blocks, bidirectional
// attention) and the embeddings it yields. The fast path runs the matmuls of
// a whole batch of sequences together (kernels/matmul.h) and attention per
// sequence; the reference runs one sequence with scalar loops in double.
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "encoder/encoder_model.h"

namespace stride {

// Last-layer hidden states of every token of every sequence, concatenated:
// [sum of lengths, n_embd]. Each sequence is at most model.max_tokens() long
// (token type 0, positions from 0).
Expected<std::vector<float>> encoder_forward(const EncoderModel& model, const std::vector<std::vector<int32_t>>& seqs,
                                             ThreadPool& pool);
// One sequence: [n, n_embd], plain loops.
Expected<std::vector<float>> encoder_forward_ref(const EncoderModel& model, const std::vector<int32_t>& ids);

// One pooled (and, when the model says so, L2-normalized) vector per sequence.
Expected<std::vector<std::vector<float>>> encoder_embed(const EncoderModel& model,
                                                        const std::vector<std::vector<int32_t>>& seqs,
                                                        ThreadPool& pool);

}  // namespace stride
