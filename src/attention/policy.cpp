// Policy grammar: "dense" | "window:size=W" | "rswa:sinks=S,window=W[,pos=rel|abs]"
// | "topk:sparsity=R|mass=P[,min=T,max=T],block=B[,sinks=S,window=W,resident=N,decode=dense|prefill=dense,
//        last=dense,estimate=pooled|oracle|rerank,shortlist=F]"
// | "sparse_prefill[:...]" (topk's keys; decode=dense, select=block, estimate=pooled, mass=0.95 by default;
//        estimate=rerank keeps the pooled estimate as its first stage)
// | "strided:window=W,stride=S[,globals=G,block=B,ranges=A-B+C-D]".
// Arguments are comma-separated key=value; a list inside one value uses '+'.
#include "attention/policy.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

namespace stride {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct KeyValue {
  std::string_view key;
  std::string_view value;
};

Expected<std::vector<KeyValue>> split_args(std::string_view kind, std::string_view args) {
  std::vector<KeyValue> out;
  while (!args.empty()) {
    const size_t comma = args.find(',');
    const std::string_view item = trim(args.substr(0, comma));
    args = comma == std::string_view::npos ? std::string_view{} : args.substr(comma + 1);
    const size_t eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos)
      return InvalidArgument("policy '" + std::string(kind) + "': expected key=value, got '" +
                             std::string(item) + "'");
    const KeyValue kv{trim(item.substr(0, eq)), trim(item.substr(eq + 1))};
    for (const auto& prev : out)
      if (prev.key == kv.key)
        return InvalidArgument("policy '" + std::string(kind) + "': key '" + std::string(kv.key) +
                               "' given twice");
    out.push_back(kv);
  }
  return out;
}

Expected<int64_t> parse_positive(std::string_view kind, const KeyValue& kv) {
  int64_t v = 0;
  const char* end = kv.value.data() + kv.value.size();
  const auto res = std::from_chars(kv.value.data(), end, v);
  if (kv.value.empty() || res.ec != std::errc() || res.ptr != end)
    return InvalidArgument("policy '" + std::string(kind) + "': " + std::string(kv.key) +
                           " must be an integer, got '" + std::string(kv.value) + "'");
  if (v <= 0)
    return InvalidArgument("policy '" + std::string(kind) + "': " + std::string(kv.key) +
                           " must be positive, got " + std::to_string(v));
  return v;
}

Status unknown_key(std::string_view kind, const KeyValue& kv, const char* allowed) {
  return InvalidArgument("policy '" + std::string(kind) + "': unknown key '" +
                         std::string(kv.key) + "' (allowed: " + allowed + ")");
}

Expected<double> parse_fraction(std::string_view kind, const KeyValue& kv) {
  double v = 0;
  const char* end = kv.value.data() + kv.value.size();
  const auto res = std::from_chars(kv.value.data(), end, v);
  if (kv.value.empty() || res.ec != std::errc() || res.ptr != end || !(v >= 0.0 && v < 1.0))
    return InvalidArgument("policy '" + std::string(kind) + "': " + std::string(kv.key) +
                           " must be a number in [0, 1), got '" + std::string(kv.value) + "'");
  return v;
}

Expected<double> parse_factor(std::string_view kind, const KeyValue& kv) {
  double v = 0;
  const char* end = kv.value.data() + kv.value.size();
  const auto res = std::from_chars(kv.value.data(), end, v);
  if (kv.value.empty() || res.ec != std::errc() || res.ptr != end || !(v >= 1.0 && v <= 1e6))
    return InvalidArgument("policy '" + std::string(kind) + "': " + std::string(kv.key) +
                           " must be a number >= 1, got '" + std::string(kv.value) + "'");
  return v;
}

// sparse_prefill: block-sparse prompt chunks (pooled estimate, adaptive
// budget) and dense decoding; the keys topk takes may override it.
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
    } else if (kv.key == "heads") {
      if (kv.value.empty()) return InvalidArgument("policy 'topk': heads=FILE needs a profile file");
      spec.heads_file = std::string(kv.value);
    } else if (kv.key == "retrieval") {  // in (0, 1]; 1: every head, picks by its distant mass
      spec.retrieval = 1.0;
      if (kv.value != "1") { STRIDE_ASSIGN_OR_RETURN(spec.retrieval, parse_fraction("topk", kv)); }
      if (spec.retrieval <= 0.0) return InvalidArgument("policy 'topk': retrieval must be in (0, 1], got 0");
    } else {
      return unknown_key("topk", kv,
                         "sparsity, mass, min, max, block, sinks, window, resident, select, decode, prefill, "
                         "last, estimate, shortlist, heads, retrieval");
    }
  }
  if (spec.retrieval > 0.0 && spec.heads_file.empty())
    return InvalidArgument("policy 'topk': retrieval=F is the share of heads a heads=FILE profile keeps: give heads=FILE");
  if (!spec.heads_file.empty()) {
    if (spec.retrieval == 0.0) spec.retrieval = 0.5;
    if (spec.mass > 0.0 || spec.resident > 0)
      return InvalidArgument("policy 'topk': heads=FILE splits a fixed budget between heads: give sparsity=R, "
                             "without mass=P or resident=N");
  }
  if (spec.shortlist > 0.0 && !spec.rerank_estimate)
    return InvalidArgument("policy 'topk': shortlist=F sizes the first stage of estimate=rerank: give estimate=rerank too");
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
      }
      if (!p.heads_file.empty()) {
        std::snprintf(buf, sizeof buf, "%g", p.retrieval);
        s += ",heads=" + p.heads_file + ",retrieval=" + buf;
      }
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
