// Policy grammar: "dense" | "window:size=W" | "rswa:sinks=S,window=W[,pos=rel|abs]"
// | "topk:sparsity=R|mass=P[,min=T,max=T],block=B[,sinks=S,window=W,resident=N,decode=dense|prefill=dense,
//        last=dense,estimate=pooled|oracle|rerank,shortlist=F,dense_layers=A-B+C]"
// | "sparse_prefill[:...]" (topk's keys; decode=dense, select=block, estimate=pooled, mass=0.95,
//        window=512 and last=dense by default;
//        estimate=rerank keeps the pooled estimate as its first stage)
// | "strided:window=W,stride=S[,globals=G,block=B,ranges=A-B+C-D]".
// Arguments are comma-separated key=value; a list inside one value uses '+'.
#include "attention/policy.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "attention/policy_args.h"
#include "attention/topk_policy_parse.h"

namespace stride {

namespace {

using policy_args::KeyValue;
using policy_args::parse_positive;
using policy_args::split_args;
using policy_args::trim;
using policy_args::unknown_key;

Expected<int64_t> parse_position(std::string_view text, const std::string& item) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto res = std::from_chars(text.data(), end, v);
  if (text.empty() || res.ec != std::errc() || res.ptr != end || v < 0)
    return InvalidArgument("policy 'strided': ranges: '" + item +
                           "' is not A-B with token positions 0 <= A <= B");
  return v;
}

// "A-B+C-D" -> sorted ranges, overlapping or adjacent ones merged.
Expected<std::vector<TokenRange>> parse_ranges(std::string_view text) {
  std::vector<TokenRange> out;
  while (true) {
    const size_t plus = text.find('+');
    const std::string_view item = trim(text.substr(0, plus));
    const std::string item_s(item);
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos)
      return InvalidArgument("policy 'strided': ranges: expected A-B, got '" + item_s + "'");
    STRIDE_ASSIGN_OR_RETURN(const int64_t a, parse_position(trim(item.substr(0, dash)), item_s));
    STRIDE_ASSIGN_OR_RETURN(const int64_t b, parse_position(trim(item.substr(dash + 1)), item_s));
    if (a > b)
      return InvalidArgument("policy 'strided': ranges: '" + item_s + "' ends before it starts");
    out.push_back({a, b});
    if (plus == std::string_view::npos) break;
    text = text.substr(plus + 1);
  }
  std::sort(out.begin(), out.end(),
            [](const TokenRange& x, const TokenRange& y) { return x.first < y.first; });
  std::vector<TokenRange> merged;
  for (const TokenRange& r : out) {
    if (!merged.empty() && r.first <= merged.back().last + 1)
      merged.back().last = std::max(merged.back().last, r.last);
    else
      merged.push_back(r);
  }
  return merged;
}

Expected<PolicySpec> parse_strided(const std::vector<KeyValue>& kvs) {
  PolicySpec spec;
  spec.kind = PolicyKind::Strided;
  spec.block = 32;  // the default page size, so strided blocks are whole pages
  for (const auto& kv : kvs) {
    if (kv.key == "window") {
      STRIDE_ASSIGN_OR_RETURN(spec.window, parse_positive("strided", kv));
    } else if (kv.key == "globals") {
      STRIDE_ASSIGN_OR_RETURN(spec.sinks, parse_positive("strided", kv));
    } else if (kv.key == "stride") {
      STRIDE_ASSIGN_OR_RETURN(spec.stride, parse_positive("strided", kv));
    } else if (kv.key == "block") {
      STRIDE_ASSIGN_OR_RETURN(spec.block, parse_positive("strided", kv));
    } else if (kv.key == "ranges") {
      STRIDE_ASSIGN_OR_RETURN(spec.global_ranges, parse_ranges(kv.value));
    } else {
      return unknown_key("strided", kv, "window, globals, stride, block, ranges");
    }
  }
  if (spec.window == 0) return InvalidArgument("policy 'strided': missing window=W");
  if (spec.stride == 0) return InvalidArgument("policy 'strided': missing stride=S");
  return spec;
}

}  // namespace

Expected<PolicySpec> parse_policy(std::string_view text) {
  text = trim(text);
  const size_t colon = text.find(':');
  const std::string_view kind = trim(text.substr(0, colon));
  const std::string_view args =
      colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  if (colon != std::string_view::npos && trim(args).empty())
    return InvalidArgument("policy '" + std::string(kind) + "': nothing after ':'");
  STRIDE_ASSIGN_OR_RETURN(const std::vector<KeyValue> kvs, split_args(kind, args));

  PolicySpec spec;
  if (kind == "dense") {
    if (!kvs.empty()) return InvalidArgument("policy 'dense' takes no arguments");
    spec.kind = PolicyKind::Dense;
    return spec;
  }
  if (kind == "window") {
    spec.kind = PolicyKind::Window;
    for (const auto& kv : kvs) {
      if (kv.key != "size") return unknown_key(kind, kv, "size");
      STRIDE_ASSIGN_OR_RETURN(spec.window, parse_positive(kind, kv));
    }
    if (spec.window == 0) return InvalidArgument("policy 'window': missing size=W");
    return spec;
  }
  if (kind == "rswa") {
    spec.kind = PolicyKind::RSWA;
    for (const auto& kv : kvs) {
      if (kv.key == "sinks") {
        STRIDE_ASSIGN_OR_RETURN(spec.sinks, parse_positive(kind, kv));
      } else if (kv.key == "window") {
        STRIDE_ASSIGN_OR_RETURN(spec.window, parse_positive(kind, kv));
      } else if (kv.key == "pos") {
        if (kv.value == "rel") spec.positions = PositionMode::CacheRelative;
        else if (kv.value == "abs") spec.positions = PositionMode::Absolute;
        else
          return InvalidArgument("policy 'rswa': pos must be 'rel' or 'abs', got '" +
                                 std::string(kv.value) + "'");
      } else {
        return unknown_key(kind, kv, "sinks, window, pos");
      }
    }
    if (spec.sinks == 0) return InvalidArgument("policy 'rswa': missing sinks=S");
    if (spec.window == 0) return InvalidArgument("policy 'rswa': missing window=W");
    return spec;
  }
  if (kind == "topk") return parse_topk(kvs, /*sparse_prefill=*/false);
  if (kind == "sparse_prefill") return parse_topk(kvs, /*sparse_prefill=*/true);
  if (kind == "strided") return parse_strided(kvs);
  return InvalidArgument("unknown policy '" + std::string(kind) +
                         "' (expected dense, window:size=W, rswa:sinks=S,window=W[,pos=rel|abs], "
                         "topk:sparsity=R,block=B, sparse_prefill[:mass=P] or "
                         "strided:window=W,stride=S,globals=G[,ranges=A-B+C-D])");
}

const char* pick_neighbors_name(PickNeighbors n) {
  switch (n) {
    case PickNeighbors::None: return "none";
    case PickNeighbors::Before: return "before";
    case PickNeighbors::After: return "after";
    case PickNeighbors::Both: return "both";
  }
  return "none";
}

const char* policy_kind_name(PolicyKind k) {
  switch (k) {
    case PolicyKind::Dense: return "dense";
    case PolicyKind::Window: return "window";
    case PolicyKind::RSWA: return "rswa";
    case PolicyKind::TopK: return "topk";
    case PolicyKind::Strided: return "strided";
  }
  return "unknown";
}

std::string policy_to_string(const PolicySpec& p) {
  switch (p.kind) {
    case PolicyKind::Dense: return "dense";
    case PolicyKind::Window: return "window:size=" + std::to_string(p.window);
    case PolicyKind::RSWA:
      return "rswa:sinks=" + std::to_string(p.sinks) + ",window=" + std::to_string(p.window) +
             (p.positions == PositionMode::Absolute ? ",pos=abs" : ",pos=rel");
    case PolicyKind::TopK: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", p.mass > 0.0 ? p.mass : p.sparsity);
      std::string s = std::string(p.mass > 0.0 ? "topk:mass=" : "topk:sparsity=") + buf;
      if (p.min_tokens > 0) s += ",min=" + std::to_string(p.min_tokens);
      if (p.max_tokens > 0) s += ",max=" + std::to_string(p.max_tokens);
      if (p.block > 0) s += ",block=" + std::to_string(p.block);
      if (p.sinks > 0) s += ",sinks=" + std::to_string(p.sinks);
      if (p.window > 0) s += ",window=" + std::to_string(p.window);
      if (p.resident > 0) s += ",resident=" + std::to_string(p.resident);
      if (p.select_per_block) s += ",select=block";
      if (p.decode_dense) s += ",decode=dense";
      if (p.prefill_dense) s += ",prefill=dense";
      if (p.last_chunk_dense) s += ",last=dense";
      if (p.pooled_estimate && !p.rerank_estimate) s += ",estimate=pooled";
      if (p.oracle_estimate) s += ",estimate=oracle";
      if (p.rerank_estimate) {
        std::snprintf(buf, sizeof buf, "%g", p.shortlist);
        s += std::string(",estimate=rerank,shortlist=") + buf;
        if (p.rerank_int8) s += ",rerank_keys=int8";
        if (p.rerank_rows > 0) s += ",rows=" + std::to_string(p.rerank_rows);
      }
      if (!p.heads_file.empty()) {
        std::snprintf(buf, sizeof buf, "%g", p.retrieval);
        s += ",heads=" + p.heads_file + ",retrieval=" + buf;
      }
      for (size_t i = 0; i < p.dense_layers.size(); ++i)
        s += (i == 0 ? ",dense_layers=" : "+") + std::to_string(p.dense_layers[i]);
      if (p.neighbors != PickNeighbors::None) s += std::string(",neighbors=") + pick_neighbors_name(p.neighbors);
      return s;
    }
    case PolicyKind::Strided: {
      std::string s = "strided:window=" + std::to_string(p.window) +
                      ",stride=" + std::to_string(p.stride) + ",block=" + std::to_string(p.block);
      if (p.sinks > 0) s += ",globals=" + std::to_string(p.sinks);
      for (size_t i = 0; i < p.global_ranges.size(); ++i)
        s += (i == 0 ? ",ranges=" : "+") + std::to_string(p.global_ranges[i].first) + "-" +
             std::to_string(p.global_ranges[i].last);
      return s;
    }
  }
  return "?";
}

}  // namespace stride
