// safetensors header parser: arbitrary bytes as a .safetensors file. Every
// tensor that parses must lie inside the data section.
#include <cstdlib>

#include "fuzz_support.h"
#include "loader/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stride;
  auto map = fuzz::map_bytes(data, size);
  if (!map.ok()) return 0;
  auto views = parse_safetensors(*map);
  if (!views.ok()) return 0;
  const uint8_t* begin = map->data();
  const uint8_t* end = begin + map->size();
  for (const TensorView& t : *views) {
    const bool inside = t.nbytes >= 0 && t.data >= begin && t.data <= end && t.nbytes <= end - t.data;
    if (!inside || t.n_dims < 1 || t.n_dims > 4) {
      std::fprintf(stderr, "fuzz_safetensors: tensor '%s' outside the file or of bad rank\n", t.name.c_str());
      std::abort();
    }
    if (t.nbytes > 0) {
      volatile uint8_t sink = t.data[0];
      sink = t.data[t.nbytes - 1];
      (void)sink;
    }
  }
  return 0;
}
