// How often estimate=rerank's picks on int8 copies of the keys
// (rerank_keys=int8) are the picks on the pool's own keys, on a real model's
// KV: a needle prompt (the first TOKENS tokens of TEXT with a sentence holding
// a number at the middle, then the question) is prefilled densely and decoded
// greedily under the full-precision two-stage selector; at every decode step,
// layer and kv head both selections are made from the same queries, key
// summaries and pages, and compared. Prints one JSON object.
//   ./rerank_recall MODEL TEXT [TOKENS=8192] [STEPS=16] [THREADS=1] [POLICY]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attention/topk_selector.h"
#include "engine/engine.h"
#include "kv/selection_observer.h"
#include "kv/store/page_key_codes.h"

namespace {

using namespace stride;

class RecallObserver final : public SelectionObserver {
 public:
  void on_selection(const SelectionView& v) override {
    if (v.n_q != 1 || !v.policy->rerank_estimate || !v.pool || !v.summaries) return;
    std::lock_guard<std::mutex> lock(mu_);
    const int dim = v.summaries->head_dim();
    if (!codes_) codes_ = std::make_unique<PageKeyCodes>(v.pool->n_pages(), v.n_kv_heads, dim, v.page_size);
    const std::vector<int32_t>& table = *v.page_table;
    // Full pages get their copy once, as the KV manager makes it when a page fills.
    for (int64_t L = 0; L < std::min<int64_t>((int64_t)table.size(), v.kv_len / v.page_size); ++L)
      if (table[(size_t)L] >= 0 && !codes_->current(*v.pool, table[(size_t)L])) codes_->encode(*v.pool, table[(size_t)L]);
    PolicySpec pol = *v.policy;
    pol.rerank_int8 = false;
    const TopkSelection exact = select_topk(pol, table, v.page_size, v.kv_len, v.q_pos0, 1, 1, *v.summaries, v.q,
                                            v.n_head, v.n_kv_heads, nullptr, 0, v.scale, nullptr, nullptr, v.pool);
    const TopkSelection coded = select_topk(pol, table, v.page_size, v.kv_len, v.q_pos0, 1, 1, *v.summaries, v.q,
                                            v.n_head, v.n_kv_heads, nullptr, 0, v.scale, nullptr, nullptr, v.pool,
                                            codes_.get());
    const int64_t n_pages = std::min<int64_t>((int64_t)table.size(), (v.kv_len + v.page_size - 1) / v.page_size);
    const TopkGeometry geo = topk_geometry(pol, v.page_size, n_pages, v.q_pos0);
    for (int h = 0; h < v.n_kv_heads; ++h) {
      std::set<int64_t> a, b;  // the picks: pages read that are neither sinks nor window
      for (int32_t e = exact.head_indptr[(size_t)h]; e < exact.head_indptr[(size_t)h + 1]; ++e) {
        const int64_t L = exact.pages[(size_t)e];
        if (L / geo.group_pages >= geo.n_sink && L / geo.group_pages < geo.local_from) a.insert(L);
      }
      for (int32_t e = coded.head_indptr[(size_t)h]; e < coded.head_indptr[(size_t)h + 1]; ++e) {
        const int64_t L = coded.pages[(size_t)e];
        if (L / geo.group_pages >= geo.n_sink && L / geo.group_pages < geo.local_from) b.insert(L);
      }
      int64_t hits = 0;
      for (const int64_t L : a) hits += b.count(L);
      picks_ += (int64_t)a.size();
      hits_ += hits;
      identical_ += a == b;
      ++selections_;
      worst_ = std::min(worst_, a.empty() ? 1.0 : (double)hits / (double)a.size());
    }
  }

  void print(const std::string& policy, int tokens, int steps) const {
    std::printf("{\"policy\": \"%s\", \"prompt_tokens\": %d, \"decode_steps\": %d, \"selections\": %lld, "
                "\"picks\": %lld, \"recall\": %.5f, \"identical_selections\": %.5f, \"worst_recall\": %.4f}\n",
                policy.c_str(), tokens, steps, (long long)selections_, (long long)picks_,
                picks_ ? (double)hits_ / (double)picks_ : 1.0,
                selections_ ? (double)identical_ / (double)selections_ : 1.0, worst_);
  }

 private:
  std::mutex mu_;
  std::unique_ptr<PageKeyCodes> codes_;
  int64_t picks_ = 0, hits_ = 0, identical_ = 0, selections_ = 0;
  double worst_ = 1.0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL TEXT [TOKENS=8192] [STEPS=16] [THREADS=1] [POLICY]\n", argv[0]);
    return 2;
  }
  const int tokens = argc > 3 ? std::atoi(argv[3]) : 8192, steps = argc > 4 ? std::atoi(argv[4]) : 16;
  const std::string policy = argc > 6 ? argv[6] : "topk:sparsity=0.9,prefill=dense,estimate=rerank";
  EngineOptions o;
  o.model_path = argv[1];
  auto spec = parse_policy(policy);
  if (!spec) return std::fprintf(stderr, "%s\n", spec.status().message().c_str()), 1;
  o.attention = *spec;
  o.threads = argc > 5 ? std::atoi(argv[5]) : 1;
  o.max_context = tokens + steps + 256;
  o.prefix_cache = false;
  o.show_progress = false;
  auto engine = Engine::create(o);
  if (!engine) return std::fprintf(stderr, "%s\n", engine.status().message().c_str()), 1;
  std::ifstream f(argv[2], std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  const Tokenizer& tok = *(*engine)->tokenizer();
  std::vector<int32_t> hay = tok.encode(text.str(), true, false);
  const std::vector<int32_t> needle = tok.encode(" One of the special magic numbers is 7364912. ", false, false);
  const std::vector<int32_t> ask = tok.encode("\nWhat is the special magic number mentioned above? The number is", false, false);
  hay.resize((size_t)std::max<int64_t>(0, tokens - (int64_t)needle.size() - (int64_t)ask.size()));
  hay.insert(hay.begin() + (std::ptrdiff_t)(hay.size() / 2), needle.begin(), needle.end());
  hay.insert(hay.end(), ask.begin(), ask.end());
  RecallObserver observer;
  (*engine)->kv().set_selection_observer(&observer);
  GenerateOptions g;
  g.max_tokens = steps + 1;
  g.ignore_eos = true;
  g.sampling.temperature = 0.f;
  auto r = (*engine)->generate(hay, g, {});
  (*engine)->kv().set_selection_observer(nullptr);
  if (!r) return std::fprintf(stderr, "%s\n", r.status().message().c_str()), 1;
  std::fprintf(stderr, "answer:%s\n", r->text.c_str());
  observer.print(policy, (int)hay.size(), steps);
  return 0;
}
