#include "attention/topk_policy_parse.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <string>

namespace stride {

using policy_args::KeyValue;
using policy_args::parse_factor;
using policy_args::parse_fraction;
using policy_args::parse_positive;
using policy_args::trim;
using policy_args::unknown_key;

namespace {

Expected<int> parse_layer(std::string_view text, const std::string& item) {
  int v = 0;
  const char* end = text.data() + text.size();
  const auto res = std::from_chars(text.data(), end, v);
  if (text.empty() || res.ec != std::errc() || res.ptr != end || v < 0 || v > 100000)
    return InvalidArgument("policy 'topk': dense_layers: '" + item + "' is not a layer A or a range A-B with 0 <= A <= B");
  return v;
}

// "0-1+23" -> {0, 1, 23}, sorted, each once.
Expected<std::vector<int>> parse_layer_list(std::string_view text) {
  std::vector<int> out;
  while (true) {
    const size_t plus = text.find('+');
    const std::string_view item = trim(text.substr(0, plus));
    const std::string item_s(item);
    const size_t dash = item.find('-');
    STRIDE_ASSIGN_OR_RETURN(const int a, parse_layer(trim(item.substr(0, dash)), item_s));
    int b = a;
    if (dash != std::string_view::npos) { STRIDE_ASSIGN_OR_RETURN(b, parse_layer(trim(item.substr(dash + 1)), item_s)); }
    if (a > b) return InvalidArgument("policy 'topk': dense_layers: '" + item_s + "' ends before it starts");
    for (int l = a; l <= b; ++l) out.push_back(l);
    if (plus == std::string_view::npos) break;
    text = text.substr(plus + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

Expected<PolicySpec> parse_topk(const std::vector<KeyValue>& kvs, bool sparse_prefill) {
  PolicySpec spec;
  spec.kind = PolicyKind::TopK;
  spec.sparsity = 0.9;  // the seed configuration's default
  bool fixed_budget = false;
  if (sparse_prefill) {
    spec.decode_dense = spec.select_per_block = spec.pooled_estimate = true;
    const bool budget_given = std::any_of(kvs.begin(), kvs.end(), [](const KeyValue& kv) {
      return kv.key == "sparsity" || kv.key == "mass";
    });
    if (!budget_given) spec.mass = 0.95;
    // Every query of a prompt block reads the 512 tokens before the block:
    // with one page back, a needle sentence cut by a page boundary lost the
    // binding of its key to its value and the model answered with a
    // distractor's value (docs/long-context.md, "Sparse prefill").
    spec.window = kSparsePrefillWindow;
    // The prompt's last chunk reads every page: on Qwen2.5-Coder-0.5B at 8K it
    // brings back most of the multi-key needles and passkeys the sparse chunk
    // lost (docs/long-context.md, "Sparse prefill").
    spec.last_chunk_dense = true;
  }
  for (const auto& kv : kvs) {
    if (kv.key == "sparsity") {
      STRIDE_ASSIGN_OR_RETURN(spec.sparsity, parse_fraction("topk", kv));
      fixed_budget = true;
    } else if (kv.key == "block") {
      STRIDE_ASSIGN_OR_RETURN(spec.block, parse_positive("topk", kv));
    } else if (kv.key == "sinks") {
      STRIDE_ASSIGN_OR_RETURN(spec.sinks, parse_positive("topk", kv));
    } else if (kv.key == "window") {
      STRIDE_ASSIGN_OR_RETURN(spec.window, parse_positive("topk", kv));
    } else if (kv.key == "resident") {
      STRIDE_ASSIGN_OR_RETURN(spec.resident, parse_positive("topk", kv));
    } else if (kv.key == "mass") {
      STRIDE_ASSIGN_OR_RETURN(spec.mass, parse_fraction("topk", kv));
      if (spec.mass <= 0.0) return InvalidArgument("policy 'topk': mass must be in (0, 1), got '" +
                                                   std::string(kv.value) + "'");
    } else if (kv.key == "min") {
      STRIDE_ASSIGN_OR_RETURN(spec.min_tokens, parse_positive("topk", kv));
    } else if (kv.key == "max") {
      STRIDE_ASSIGN_OR_RETURN(spec.max_tokens, parse_positive("topk", kv));
    } else if (kv.key == "select") {
      if (kv.value == "query") spec.select_per_block = false;
      else if (kv.value == "block") spec.select_per_block = true;
      else
        return InvalidArgument("policy 'topk': select must be 'query' or 'block', got '" +
                               std::string(kv.value) + "'");
    } else if (kv.key == "decode") {
      if (kv.value == "dense") spec.decode_dense = true;
      else if (kv.value == "topk") spec.decode_dense = false;
      else
        return InvalidArgument("policy 'topk': decode must be 'dense' or 'topk', got '" +
                               std::string(kv.value) + "'");
    } else if (kv.key == "prefill") {
      if (kv.value == "dense") spec.prefill_dense = true;
      else if (kv.value == "topk") spec.prefill_dense = false;
      else
        return InvalidArgument("policy 'topk': prefill must be 'dense' or 'topk', got '" +
                               std::string(kv.value) + "'");
    } else if (kv.key == "last") {
      if (kv.value == "dense") spec.last_chunk_dense = true;
      else if (kv.value == "topk") spec.last_chunk_dense = false;
      else
        return InvalidArgument("policy 'topk': last must be 'dense' or 'topk', got '" + std::string(kv.value) + "'");
    } else if (kv.key == "estimate") {
      spec.pooled_estimate = spec.oracle_estimate = spec.rerank_estimate = false;
      if (kv.value == "pooled") spec.pooled_estimate = true;
      else if (kv.value == "oracle") spec.oracle_estimate = true;
      else if (kv.value == "rerank") spec.rerank_estimate = true;
      else if (kv.value != "bound")
        return InvalidArgument("policy 'topk': estimate must be 'bound', 'pooled', 'oracle' or 'rerank', got '" +
                               std::string(kv.value) + "'");
    } else if (kv.key == "shortlist") {
      STRIDE_ASSIGN_OR_RETURN(spec.shortlist, parse_factor("topk", kv));
    } else if (kv.key == "rerank_keys") {
      if (kv.value == "int8") spec.rerank_int8 = true;
      else if (kv.value == "pool") spec.rerank_int8 = false;
      else
        return InvalidArgument("policy 'topk': rerank_keys must be 'pool' or 'int8', got '" + std::string(kv.value) +
                               "'");
    } else if (kv.key == "rows") {
      STRIDE_ASSIGN_OR_RETURN(spec.rerank_rows, parse_positive("topk", kv));
    } else if (kv.key == "heads") {
      if (kv.value.empty()) return InvalidArgument("policy 'topk': heads=FILE needs a profile file");
      spec.heads_file = std::string(kv.value);
    } else if (kv.key == "dense_layers") {
      spec.dense_layers.clear();
      if (kv.value != "none") { STRIDE_ASSIGN_OR_RETURN(spec.dense_layers, parse_layer_list(kv.value)); }
    } else if (kv.key == "neighbors") {
      const PickNeighbors all[] = {PickNeighbors::None, PickNeighbors::Before, PickNeighbors::After,
                                   PickNeighbors::Both};
      const auto it = std::find_if(std::begin(all), std::end(all),
                                   [&](PickNeighbors n) { return kv.value == pick_neighbors_name(n); });
      if (it == std::end(all))
        return InvalidArgument("policy 'topk': neighbors must be 'none', 'before', 'after' or 'both', got '" +
                               std::string(kv.value) + "'");
      spec.neighbors = *it;
    } else if (kv.key == "retrieval") {  // in (0, 1]; 1: every head, picks by its distant mass
      spec.retrieval = 1.0;
      if (kv.value != "1") { STRIDE_ASSIGN_OR_RETURN(spec.retrieval, parse_fraction("topk", kv)); }
      if (spec.retrieval <= 0.0) return InvalidArgument("policy 'topk': retrieval must be in (0, 1], got 0");
    } else {
      return unknown_key("topk", kv,
                         "sparsity, mass, min, max, block, sinks, window, resident, select, decode, prefill, "
                         "last, estimate, shortlist, rerank_keys, rows, heads, retrieval, dense_layers, neighbors");
    }
  }
  if (spec.retrieval > 0.0 && spec.heads_file.empty())
    return InvalidArgument("policy 'topk': retrieval=F is the share of heads a heads=FILE profile keeps: give heads=FILE");
  if (!spec.heads_file.empty()) {
    if (spec.retrieval == 0.0) spec.retrieval = 0.5;
    // Prompt chunks (decode=dense): the retrieval heads read every page and
    // the others select under the policy's own budget, fixed or mass=P.
    if (spec.resident > 0 || (spec.mass > 0.0 && !spec.decode_dense))
      return InvalidArgument("policy 'topk': heads=FILE splits a fixed budget between heads: give sparsity=R, "
                             "without mass=P or resident=N (with decode=dense, as sparse_prefill, mass=P is "
                             "allowed: the retrieval heads read every page of prompt chunks)");
  }
  if (spec.neighbors != PickNeighbors::None && spec.resident > 0)
    return InvalidArgument("policy 'topk': neighbors=... reads pages beside the budget's picks, beyond what "
                           "resident=N reserves in the pool: drop one");
  if (spec.rerank_rows > 0 && !(spec.rerank_estimate && spec.decode_dense))
    return InvalidArgument("policy 'topk': rows=N is how many of a prompt block's queries estimate=rerank scores: "
                           "give estimate=rerank with decode=dense (as sparse_prefill)");
  if (spec.shortlist > 0.0 && !spec.rerank_estimate)
    return InvalidArgument("policy 'topk': shortlist=F sizes the first stage of estimate=rerank: give estimate=rerank too");
  if (spec.rerank_int8 && !spec.rerank_estimate)
    return InvalidArgument("policy 'topk': rerank_keys=int8 is the keys the second stage of estimate=rerank scores: "
                           "give estimate=rerank too");
  if (spec.rerank_estimate) {
    if (spec.shortlist == 0.0) spec.shortlist = 4.0;
    if (spec.resident > 0)
      return InvalidArgument("policy 'topk': estimate=rerank scores the shortlisted pages from their keys in the pool, "
                             "and with resident=N they may be in the offload tier: drop resident=N");
    if (!spec.prefill_dense && !spec.decode_dense)
      return InvalidArgument("policy 'topk': estimate=rerank selects on one side only: give prefill=dense (decode "
                             "steps select) or decode=dense (prompt chunks select, as sparse_prefill does)");
    if (spec.prefill_dense && spec.mass > 0.0)
      return InvalidArgument("policy 'topk': estimate=rerank on decode steps keeps a shortlist of a fixed budget: "
                             "give sparsity=R, not mass=P");
    // Prompt chunks: the first stage is the pooled estimate (one mean query
    // per head), the second scores a few of the block's queries exactly.
    if (spec.decode_dense) spec.pooled_estimate = true;
  }
  if (!spec.dense_layers.empty() && spec.prefill_dense)
    return InvalidArgument("policy 'topk': dense_layers=L reads every page on the prompt chunks of layers L, and "
                           "prefill=dense already does on every layer: drop one");
  if (spec.last_chunk_dense && spec.prefill_dense)
    return InvalidArgument("policy 'topk': last=dense reads every page on the prompt's last chunk, and prefill=dense "
                           "already does on every chunk: drop one");
  if (spec.decode_dense && spec.prefill_dense)
    return InvalidArgument("policy 'topk': decode=dense and prefill=dense read every page: that is 'dense'");
  if (spec.prefill_dense && spec.resident > 0)
    return InvalidArgument("policy 'topk': prefill=dense reads every page, so it cannot keep only resident=N in the pool");
  if (spec.oracle_estimate && !spec.prefill_dense)
    return InvalidArgument("policy 'topk': estimate=oracle scores every key of every page, so it runs on decode "
                           "steps only: give prefill=dense too");
  if (spec.oracle_estimate && spec.mass > 0.0)
    return InvalidArgument("policy 'topk': estimate=oracle ranks pages at a fixed budget: give sparsity=R, not mass=P");
  if (spec.decode_dense && spec.resident > 0)
    return InvalidArgument("policy 'topk': decode=dense reads every page, so it cannot keep only resident=N in the pool");
  if (fixed_budget && spec.mass > 0.0)
    return InvalidArgument("policy 'topk': give sparsity=R (a fixed budget) or mass=P (adaptive), not both");
  const bool bounds = spec.min_tokens > 0 || spec.max_tokens > 0;
  if (bounds && spec.mass <= 0.0)
    return InvalidArgument("policy 'topk': min and max bound the adaptive budget: give mass=P too");
  if (spec.max_tokens > 0 && spec.min_tokens > spec.max_tokens)
    return InvalidArgument("policy 'topk': min (" + std::to_string(spec.min_tokens) +
                           ") exceeds max (" + std::to_string(spec.max_tokens) + ")");
  return spec;
}

}  // namespace stride
