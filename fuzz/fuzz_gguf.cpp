// GGUF reader: arbitrary bytes as a .gguf file. Whatever parses must keep its
// promises: every tensor lies inside the file, every typed getter answers
// without reading past the map, and the config and tokenizer built from the
// metadata fail cleanly or work.
#include <cstdlib>

#include "fuzz_support.h"
#include "loader/model_source.h"

namespace {

using namespace stride;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_gguf: broken invariant: %s\n", what);
    std::abort();
  }
}

// Reads every value every way: the getters must reject mismatches, not misread.
void touch_metadata(const GGUFFile& f) {
  for (const std::string& key : f.keys()) {
    check(f.find(key) != nullptr, "keys() lists a key find() cannot find");
    (void)f.get_int(key);
    (void)f.get_float(key);
    (void)f.get_bool(key);
    if (auto s = f.get_string(key); s.ok()) check(s->size() <= f.file_size(), "string longer than the file");
    if (auto a = f.get_string_array(key); a.ok()) check(a->size() <= f.file_size(), "string array too long");
    (void)f.get_float_array(key);
    (void)f.get_int_array(key);
  }
}

void touch_tensors(const GGUFFile& f) {
  if (f.tensors().empty()) return;
  const uint8_t* begin = fuzz::memfd_mapping();
  check(begin != nullptr, "the parsed file is not mapped exactly once");
  const uint8_t* end = begin + f.file_size();
  for (const TensorView& t : f.tensors()) {
    check(f.find_tensor(t.name) != nullptr, "tensor missing from its index");
    check(t.n_dims >= 1 && t.n_dims <= 4, "tensor rank outside 1..4");
    check(t.nbytes >= 0, "negative tensor size");
    if (t.nbytes == 0) continue;
    check(t.data >= begin && t.data <= end && t.nbytes <= end - t.data, "tensor data outside the file");
    // Touch the first and last byte so ASan sees any error in the bounds above.
    volatile uint8_t sink = t.data[0];
    sink = t.data[t.nbytes - 1];
    (void)sink;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto map = fuzz::map_bytes(data, size);
  if (!map.ok()) return 0;
  auto f = GGUFFile::parse(std::move(*map));
  if (!f.ok()) return 0;
  const GGUFFile& g = **f;
  touch_metadata(g);
  touch_tensors(g);
  (void)config_from_gguf(g);
  auto tok = Tokenizer::from_gguf(g);
  if (tok.ok()) {
    const Tokenizer& t = **tok;
    const std::vector<int32_t> ids = t.encode("Hello world <s> \xE2\x96\x81 caf\xC3\xA9 123", true, true);
    for (int32_t id : ids) check(id >= 0 && id < t.n_vocab(), "encode produced an id outside the vocabulary");
    (void)t.decode(ids);
    (void)t.decode(ids, true);
  }
  return 0;
}
