#pragma once
// Wall time and weight bytes per op kind of the single-token forward pass
// (decode), for finding what bounds decode against the memory bandwidth. The
// transformer fills one when given (Transformer::set_op_profile); the caller
// owns it and reads it back. Each op is timed around its pool dispatch, so the
// time includes the dispatch's wake-up and join. Besides wall time each op
// records the calling thread's CPU time: on a loaded machine, where the OS
// deschedules the process, bytes over CPU time still show the rate the kernel
// streams at while it runs.
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stride {

class OpProfile {
 public:
  struct Entry {
    std::string op;      // "ffn_gate_up Q4_K", "attention", ...
    int64_t calls = 0;   // summed over layers and tokens
    double seconds = 0;
    double cpu_seconds = 0;  // of the calling thread (pool worker 0)
    int64_t bytes = 0;   // weight bytes read (0 for ops without weights)
  };

  // Adds one call of `op`, which read `bytes` of weights.
  void add(const std::string& op, int64_t bytes, double seconds, double cpu_seconds);
  // One decode step done, taking `seconds` in all (ops and the glue between them).
  void add_step(double seconds) {
    ++steps_;
    step_seconds_ += seconds;
  }

  const std::vector<Entry>& entries() const { return entries_; }
  int64_t steps() const { return steps_; }
  double step_seconds() const { return step_seconds_; }
  void clear() { *this = OpProfile(); }

 private:
  std::vector<Entry> entries_;  // in first-seen order: the forward pass's order
  int64_t steps_ = 0;
  double step_seconds_ = 0;
};

// CPU time of the calling thread.
double thread_cpu_seconds();
// CPU time of this process so far, every thread.
double process_cpu_seconds();

// Times a scope into an OpProfile; does nothing when the profile is null.
class OpTimer {
 public:
  OpTimer(OpProfile* profile, std::string op, int64_t bytes = 0)
      : profile_(profile), op_(std::move(op)), bytes_(bytes) {
    if (!profile_) return;
    start_ = std::chrono::steady_clock::now();
    cpu_start_ = thread_cpu_seconds();
  }
  ~OpTimer() { stop(); }
  // Ends the timing before the scope does (once; later calls do nothing).
  void stop() {
    if (!profile_) return;
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start_;
    profile_->add(op_, bytes_, d.count(), thread_cpu_seconds() - cpu_start_);
    profile_ = nullptr;
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  OpProfile* profile_;
  std::string op_;
  int64_t bytes_;
  std::chrono::steady_clock::time_point start_;
  double cpu_start_ = 0;
};

}  // namespace stride
