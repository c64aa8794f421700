#pragma once
// Mixture-of-experts hyper-parameters: how many experts a layer holds, how
// many each token uses, and how the router's scores become expert weights.
namespace stride {

// How router logits become the weights of the chosen experts.
enum class MoeGating {
  SoftmaxThenTopK,  // Mixtral, Qwen-MoE: softmax over all experts, keep the top k
  TopKThenSoftmax,  // gpt-oss: keep the k largest logits, softmax over those
};

struct MoeConfig {
  int n_expert = 0;       // experts per layer; 0: a dense feed-forward block
  int n_expert_used = 0;  // experts each token is routed to (top k)
  int n_ff_expert = 0;    // hidden size of one expert
  int n_ff_shared = 0;    // hidden size of the always-on shared expert; 0: none (Qwen2-MoE has one)
  // Rescale the k chosen weights to sum to 1 (Mixtral, Qwen3-MoE; not Qwen2-MoE).
  bool norm_topk_prob = true;
  MoeGating gating = MoeGating::SoftmaxThenTopK;
  bool router_bias = false;  // gpt-oss: the router has a bias
  bool expert_bias = false;  // gpt-oss: every expert projection has a bias
  // gpt-oss's clamped SwiGLU when > 0: g = min(gate, limit), u = clamp(up, ±limit),
  // out = (u + 1) * g * sigmoid(alpha * g). 0: the model's plain activation.
  float swiglu_limit = 0.f;
  float swiglu_alpha = 0.f;

  bool active() const { return n_expert > 0; }
};

}  // namespace stride
