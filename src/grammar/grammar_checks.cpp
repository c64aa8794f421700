#include "grammar/grammar_checks.h"

#include <algorithm>

namespace stride::grammar {

namespace {

using G = CompiledGrammar;

struct AltRef {
  uint32_t rule;   // owner of the alternative
  uint32_t start;  // its first element
};

std::vector<AltRef> all_alts(const G& g) {
  std::vector<AltRef> out;
  for (uint32_t r = 0; r < g.rule_alts.size(); ++r)
    for (uint32_t a : g.rule_alts[r]) out.push_back({r, a});
  return out;
}

// Least fixpoint of "rule r has an alternative whose rule references all
// satisfy `done`", where `counts(element)` says whether an element needs its
// rule to be done (productive: every rule reference; nullable: every element,
// a byte set never being done). Worklist: linear in the grammar size.
std::vector<char> fixpoint(const G& g, bool bytes_block) {
  const std::vector<AltRef> alts = all_alts(g);
  std::vector<int> pending(alts.size(), 0);
  std::vector<std::vector<uint32_t>> users(g.rule_alts.size());  // rule -> alternatives waiting on it
  std::vector<char> done(g.rule_alts.size(), 0);
  std::vector<uint32_t> queue;
  for (uint32_t a = 0; a < alts.size(); ++a) {
    bool blocked = false;
    for (uint32_t p = alts[a].start; G::kind(g.elements[p]) != ElementKind::End; ++p) {
      if (G::kind(g.elements[p]) == ElementKind::Rule) {
        ++pending[a];
        users[G::arg(g.elements[p])].push_back(a);
      } else if (bytes_block) {
        blocked = true;
      }
    }
    if (blocked) pending[a] = -1;
    if (pending[a] == 0 && !done[alts[a].rule]) {
      done[alts[a].rule] = 1;
      queue.push_back(alts[a].rule);
    }
  }
  while (!queue.empty()) {
    const uint32_t r = queue.back();
    queue.pop_back();
    for (uint32_t a : users[r]) {
      if (pending[a] > 0 && --pending[a] == 0 && !done[alts[a].rule]) {
        done[alts[a].rule] = 1;
        queue.push_back(alts[a].rule);
      }
    }
  }
  return done;
}

struct Edge {
  uint32_t to;
  bool grows;  // work is left behind the reference
};

}  // namespace

Status check_productive(const G& g) {
  const std::vector<char> productive = fixpoint(g, false);
  for (uint32_t r = 0; r < productive.size(); ++r) {
    if (!productive[r]) {
      return InvalidArgument("grammar: the rule '" + g.rule_names[r] + "' can never finish (every alternative recurses)");
    }
  }
  return Status::Ok();
}

Status check_left_recursion(const G& g) {
  const std::vector<char> nullable = fixpoint(g, true);
  const size_t n = g.rule_alts.size();
  std::vector<std::vector<Edge>> edges(n);
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t start : g.rule_alts[r]) {
      for (uint32_t p = start; G::kind(g.elements[p]) == ElementKind::Rule; ++p) {
        const uint32_t s = G::arg(g.elements[p]);
        edges[r].push_back({s, G::kind(g.elements[p + 1]) != ElementKind::End});
        if (!nullable[s]) break;
      }
    }
  }
  // Tarjan's strongly connected components, iteratively.
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<char> on_stack(n, 0);
  std::vector<uint32_t> stack;
  std::vector<std::pair<uint32_t, size_t>> call;  // (rule, next edge)
  int next_index = 0, n_comp = 0;
  for (uint32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    call.push_back({root, 0});
    index[root] = low[root] = next_index++;
    stack.push_back(root);
    on_stack[root] = 1;
    while (!call.empty()) {
      auto& [v, e] = call.back();
      if (e < edges[v].size()) {
        const uint32_t w = edges[v][e++].to;
        if (index[w] < 0) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = 1;
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const uint32_t done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
      if (low[done] == index[done]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          comp[w] = n_comp;
        } while (w != done);
        ++n_comp;
      }
    }
  }
  for (uint32_t r = 0; r < n; ++r) {
    for (const Edge& e : edges[r]) {
      if (e.grows && comp[e.to] == comp[r]) {
        return InvalidArgument("grammar: the rule '" + g.rule_names[r] +
                               "' is left-recursive (it can reach itself before matching anything); "
                               "rewrite it with repetition, e.g. x ::= y (\"+\" y)*");
      }
    }
  }
  return Status::Ok();
}

}  // namespace stride::grammar
