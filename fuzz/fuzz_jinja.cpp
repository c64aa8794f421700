// The Jinja engine on hostile templates and contexts. Input: template text,
// 0x00, then a JSON context (ignored when it does not parse). Parsing and
// rendering must end in a value or a Status, within the limits, and the
// client ranges must lie in the text, sorted and disjoint.
#include <cstdio>
#include <cstdlib>

#include "fuzz_support.h"
#include "jinja/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stride;
  fuzz::ByteReader in(data, size);
  const std::string source(in.field());
  const std::string context_text(in.rest());
  auto t = jinja::Template::parse(source);
  if (!t.ok()) return 0;
  nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(context_text, nullptr, /*allow_exceptions=*/false);
  if (ctx.is_discarded() || !ctx.is_object()) ctx = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  jinja::RenderOptions options;
  options.max_output_bytes = 1 << 20;  // small limits keep each input fast
  options.max_iterations = 1 << 14;
  options.max_built_bytes = 16 << 20;
  auto r = t->render(jinja::context_from_json(ctx, {{"bos_token", jinja::Value("<s>")}}), options);
  if (!r.ok()) return 0;
  if (r->text.size() > options.max_output_bytes) std::abort();
  size_t last = 0;
  for (const jinja::Span& s : r->literal) {
    if (s.begin < last || s.end <= s.begin || s.end > r->text.size()) {
      std::fprintf(stderr, "fuzz_jinja: bad client range [%zu, %zu)\n", s.begin, s.end);
      std::abort();
    }
    last = s.end;
  }
  return 0;
}
