#include "model/op_profile.h"

#include <time.h>

namespace stride {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void OpProfile::add(const std::string& op, int64_t bytes, double seconds, double cpu_seconds) {
  for (Entry& e : entries_) {
    if (e.op != op) continue;
    ++e.calls;
    e.seconds += seconds;
    e.cpu_seconds += cpu_seconds;
    e.bytes += bytes;
    return;
  }
  entries_.push_back(Entry{op, 1, seconds, cpu_seconds, bytes});
}

}  // namespace stride
