#pragma once
// This process's memory as Linux reports it in /proc/self/status.
#include <cstdint>

namespace stride {

// A "Vm..." field of /proc/self/status in bytes ("VmRSS": resident now,
// "VmHWM": peak resident); 0 when it cannot be read.
int64_t process_status_bytes(const char* field);

}  // namespace stride
