#include "model/weight_prefetch.h"

#include <unistd.h>

#include <cstdio>

namespace stride {

namespace {

void draw_bar(int64_t done, int64_t total) {
  constexpr int kWidth = 40;
  const double frac = total > 0 ? (double)done / (double)total : 1.0;
  const int filled = (int)(frac * kWidth);
  std::fprintf(stderr, "\rloading weights [");
  for (int i = 0; i < kWidth; ++i) std::fputc(i < filled ? '#' : ' ', stderr);
  std::fprintf(stderr, "] %3d%% %6.1f MiB", (int)(frac * 100), (double)done / (1 << 20));
  std::fflush(stderr);
}

}  // namespace

int64_t prefetch_weights(const ModelSource& src, bool show_progress) {
  show_progress = show_progress && isatty(STDERR_FILENO);
  const int64_t total = src.weight_bytes();
  const long page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  int64_t done = 0;
  int64_t next_draw = 0;
  volatile uint8_t sink = 0;
  for (const auto& [name, t] : src.tensors()) {
    for (int64_t off = 0; off < t.nbytes; off += page) sink = sink ^ t.data[off];
    done += t.nbytes;
    if (show_progress && done >= next_draw) {
      draw_bar(done, total);
      next_draw = done + total / 100;
    }
  }
  if (show_progress) {
    draw_bar(total, total);
    std::fputc('\n', stderr);
  }
  return done;
}

}  // namespace stride
