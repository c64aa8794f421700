#pragma once
// gpt-oss: what sets it apart from the shared decoder. Learned attention
// sinks, alternating sliding-window (even layers) and full layers, q/k/v/o
// biases, a biased router that softmaxes over its top k, experts with biases
// and a clamped SwiGLU, NeoX RoPE with YaRN that does not truncate its ramp.
#include <map>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "loader/model_config.h"

namespace stride {

class ModelSource;

// The flags every gpt-oss file implies, after the generic and MoE keys are
// read. from_gguf: GGUF files carry no YaRN "truncate" key, and gpt-oss was
// trained without truncation, so it is set off there (config.json says).
Status configure_gpt_oss(ModelConfig& c, bool from_gguf);

// llama.cpp's converter names the pre-FFN norm "post_attention_norm"; the
// shared decoder reads it as "ffn_norm".
Status adapt_gpt_oss_gguf_tensors(ModelSource& src);

// HF folders hold the experts fused and transposed: gate_up_proj [E, n_embd,
// 2F] with gate and up interleaved by column, down_proj [E, F, n_embd], and
// biases [E, 2F] / [E, n_embd]. Takes those entries out of `hf` and adds the
// GGUF-shaped tensors (ffn_{gate,up,down}_exps.{weight,bias}) to src, in
// buffers src owns. Checkpoints with MXFP4 experts (*_blocks, *_scales) are
// refused: convert them to GGUF.
Status take_gpt_oss_hf_experts(ModelSource& src, std::map<std::string, TensorView>& hf);

}  // namespace stride
