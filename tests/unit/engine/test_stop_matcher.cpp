// The Aho-Corasick stop matcher against a plain reference (the earliest byte
// at which any stop string completes; the longest suffix that is a proper
// prefix of one), and its linear cost on adversarial stop strings.
#include <gtest/gtest.h>

#include <random>

#include "engine/stop_text.h"

using namespace stride;

namespace {

// Reference: scan byte by byte; cut at the first end of any stop string, taking
// the longest one that ends there.
struct Reference {
  std::string text;
  bool stopped = false;
  size_t cut = 0;
  void run(const std::string& all, const std::vector<std::string>& stops) {
    for (size_t i = 0; i < all.size() && !stopped; ++i) {
      text.push_back(all[i]);
      size_t best = 0;
      for (const auto& s : stops) {
        if (!s.empty() && text.size() >= s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0) {
          best = std::max(best, s.size());
        }
      }
      if (best) {
        stopped = true;
        text.resize(text.size() - best);
      }
    }
  }
};

}  // namespace

TEST(StopMatcher, AgreesWithReferenceOnRandomText) {
  std::mt19937 rng(1234);
  const std::string alphabet = "abc";
  auto random_string = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s.push_back(alphabet[rng() % alphabet.size()]);
    return s;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    for (int k = 0, n = 1 + rng() % 4; k < n; ++k) stops.push_back(random_string(1 + rng() % 5));
    const std::string all = random_string(rng() % 40);
    Reference ref;
    ref.run(all, stops);
    // Streamed in random pieces, with take_safe between them.
    StopText st(stops);
    std::string out;
    bool stopped = false;
    for (size_t at = 0; at < all.size() && !stopped;) {
      const size_t len = 1 + rng() % 6;
      stopped = st.append(all.substr(at, len));
      at += len;
      const std::string safe = st.take_safe();
      out += safe;
      // Nothing released may be the start of a stop string still in progress.
      if (!stopped) EXPECT_LE(out.size(), st.text().size());
    }
    out += st.take_all();
    EXPECT_EQ(stopped, ref.stopped) << all;
    EXPECT_EQ(out, ref.text) << all;
  }
}

TEST(StopMatcher, LinearInTheTextWhateverTheStopLength) {
  // The worst case for naive matching: a 20,000-byte stop string of one
  // repeated byte, fed a text of that byte that never completes it.
  const std::string stop(20000, 'a');
  StopText st({stop, std::string(19999, 'a') + "b"});
  const std::string piece(1, 'a');
  size_t released = 0;
  for (int i = 0; i < 19999; ++i) {
    ASSERT_FALSE(st.append(piece));
    released += st.take_safe().size();
  }
  EXPECT_EQ(released, 0u);  // all of it could still become the stop string
  EXPECT_LE(st.matcher().transitions(), 2u * 19999u);
  EXPECT_TRUE(st.append("a"));  // the 20,000th byte completes it
  EXPECT_EQ(st.take_all(), "");
  // Text that breaks the run is released at once.
  StopText other({stop});
  other.append(std::string(5000, 'a') + "x");
  EXPECT_EQ(other.take_safe().size(), 5001u);
  EXPECT_LE(other.matcher().transitions(), 2u * 5001u);
}
