#include "core/process_memory.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace stride {

int64_t process_status_bytes(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  const size_t n = std::strlen(field);
  char line[256];
  int64_t kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, field, n) == 0 && line[n] == ':') {
      kb = std::atoll(line + n + 1);
      break;
    }
  }
  std::fclose(f);
  return kb * 1024;
}

}  // namespace stride
