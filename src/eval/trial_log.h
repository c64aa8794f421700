#pragma once
// An append-only record of finished trials (JSON lines), so a long sweep can
// stop and resume: a 32K dense prefill of a 0.5B model takes minutes on two
// cores, and a sweep has hundreds of them. Each line names the run (policy
// and every setting that shapes the answer), the prompt by fingerprint and
// the answer bound; a trial found under the same three keys is not run again.
// A line cut short by a stop mid-write is skipped.
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <tuple>

#include "core/status.h"

namespace stride {

struct RecordedTrial {
  std::string answer;
  int new_tokens = 0;
  int64_t pages_read = 0;     // KV pages attention read during the trial
  int64_t pages_present = 0;  // KV pages present at each read, summed
  double seconds = 0;
};

class TrialLog {
 public:
  // Reads the trials already in `path` (a missing file is an empty log) and
  // opens it for appending. `model_sha256` must match every line's.
  static Expected<TrialLog> open(const std::string& path, const std::string& model_sha256);

  const RecordedTrial* find(const std::string& run, const std::string& prompt_sha256, int max_new_tokens) const;
  // Written and flushed at once, so a stop loses at most the trial under way.
  Status append(const std::string& run, const std::string& prompt_sha256, int max_new_tokens,
                const RecordedTrial& trial);

  size_t size() const { return trials_.size(); }
  int skipped_lines() const { return skipped_lines_; }

 private:
  using Key = std::tuple<std::string, std::string, int>;
  std::string path_;
  std::string model_sha256_;
  std::map<Key, RecordedTrial> trials_;
  std::ofstream out_;
  int skipped_lines_ = 0;
};

}  // namespace stride
