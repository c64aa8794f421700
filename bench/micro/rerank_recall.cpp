// How often estimate=rerank's picks on int8 copies of the keys
// (rerank_keys=int8) are the picks on the pool's own keys, on a real model's
// KV: a needle prompt (the first TOKENS tokens of TEXT with a sentence holding
// a number at the middle, then the question) is prefilled densely and decoded
// greedily under the full-precision two-stage selector; at every decode step,
// layer and kv head both selections are made from the same queries, key
// summaries and pages, and compared. Beside it, the picks of smaller
// shortlists on the int8 copies (F = 2, 3) and of every selector against the
// oracle's (exact mass of every page, estimate=oracle) from the same state.
// Prints one JSON object.
//   ./rerank_recall MODEL TEXT [TOKENS=8192] [STEPS=16] [THREADS=1] [POLICY]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attention/page_mass.h"
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
    PolicySpec oracle_pol = pol;
    oracle_pol.rerank_estimate = false;
    oracle_pol.shortlist = 0;
    oracle_pol.oracle_estimate = true;
    const std::vector<float> mass = oracle_page_scores(*v.pool, table, v.kv_len, v.q, 1, v.n_head, v.n_kv_heads, v.scale);
    const TopkSelection oracle = select_topk(oracle_pol, table, v.page_size, v.kv_len, v.q_pos0, 1, 1, *v.summaries,
                                             v.q, v.n_head, v.n_kv_heads, nullptr, 0, v.scale, nullptr, &mass, v.pool);
    std::vector<TopkSelection> smaller;  // int8 copies, shortlist kShortlists[i]
    for (const double F : kShortlists) {
      PolicySpec p = pol;
      p.shortlist = F;
      smaller.push_back(select_topk(p, table, v.page_size, v.kv_len, v.q_pos0, 1, 1, *v.summaries, v.q, v.n_head,
                                    v.n_kv_heads, nullptr, 0, v.scale, nullptr, nullptr, v.pool, codes_.get()));
    }
    const int64_t n_pages = std::min<int64_t>((int64_t)table.size(), (v.kv_len + v.page_size - 1) / v.page_size);
    const TopkGeometry geo = topk_geometry(pol, v.page_size, n_pages, v.q_pos0);
    // The picks of head h: pages read that are neither sinks nor window.
    auto picks = [&](const TopkSelection& s, int h) {
      std::set<int64_t> out;
      for (int32_t e = s.head_indptr[(size_t)h]; e < s.head_indptr[(size_t)h + 1]; ++e) {
        const int64_t L = s.pages[(size_t)e];
        if (L / geo.group_pages >= geo.n_sink && L / geo.group_pages < geo.local_from) out.insert(L);
      }
      return out;
    };
    auto hits_of = [](const std::set<int64_t>& want, const std::set<int64_t>& got) {
      int64_t n = 0;
      for (const int64_t L : want) n += got.count(L);
      return n;
    };
    for (int h = 0; h < v.n_kv_heads; ++h) {
      const std::set<int64_t> a = picks(exact, h), b = picks(coded, h), o = picks(oracle, h);
      oracle_picks_ += (int64_t)o.size();
      oracle_hits_[0] += hits_of(o, a);
      oracle_hits_[1] += hits_of(o, b);
      for (size_t i = 0; i < smaller.size(); ++i) {
        const std::set<int64_t> c = picks(smaller[i], h);
        smaller_hits_[i] += hits_of(a, c);
        oracle_hits_[2 + i] += hits_of(o, c);
      }
      const int64_t hits = hits_of(a, b);
      picks_ += (int64_t)a.size();
      hits_ += hits;
      identical_ += a == b;
      ++selections_;
      worst_ = std::min(worst_, a.empty() ? 1.0 : (double)hits / (double)a.size());
    }
  }

  void print(const std::string& policy, int tokens, int steps) const {
    std::printf("{\"policy\": \"%s\", \"prompt_tokens\": %d, \"decode_steps\": %d, \"selections\": %lld, "
                "\"picks\": %lld, \"recall\": %.5f, \"identical_selections\": %.5f, \"worst_recall\": %.4f",
                policy.c_str(), tokens, steps, (long long)selections_, (long long)picks_,
                picks_ ? (double)hits_ / (double)picks_ : 1.0,
                selections_ ? (double)identical_ / (double)selections_ : 1.0, worst_);
    auto share = [](int64_t n, int64_t d) { return d ? (double)n / (double)d : 1.0; };
    std::printf(", \"oracle_recall\": {\"rerank_pool\": %.5f, \"rerank_int8\": %.5f", share(oracle_hits_[0], oracle_picks_),
                share(oracle_hits_[1], oracle_picks_));
    for (size_t i = 0; i < std::size(kShortlists); ++i)
      std::printf(", \"rerank_int8_shortlist_%g\": %.5f", kShortlists[i], share(oracle_hits_[2 + i], oracle_picks_));
    std::printf("}, \"recall_of_rerank_pool\": {");
    for (size_t i = 0; i < std::size(kShortlists); ++i)
      std::printf("%s\"rerank_int8_shortlist_%g\": %.5f", i ? ", " : "", kShortlists[i], share(smaller_hits_[i], picks_));
    std::printf("}}\n");
  }

 private:
  std::mutex mu_;
  std::unique_ptr<PageKeyCodes> codes_;
  static constexpr double kShortlists[] = {2, 3};
  int64_t picks_ = 0, hits_ = 0, identical_ = 0, selections_ = 0;
  int64_t oracle_picks_ = 0;
  int64_t oracle_hits_[2 + std::size(kShortlists)] = {};  // rerank pool, rerank int8, then the smaller shortlists
  int64_t smaller_hits_[std::size(kShortlists)] = {};
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
