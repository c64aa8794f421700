// Chat template detection and rendering. Input fields (0x00-separated):
// template text, architecture, then (role byte + content) per message.
// A family renderer's prompt must contain every message's content unchanged;
// a Jinja template decides what it prints, but its client ranges must lie in
// the text, sorted and disjoint.
#include <cstdlib>

#include "fuzz_support.h"
#include "serving/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stride;
  fuzz::ByteReader in(data, size);
  const std::string tmpl(in.field());
  const std::string arch(in.field());
  auto t = serving::detect_chat_template(tmpl, arch);
  if (!t.ok()) return 0;

  static const char* const kRoles[] = {"system", "user", "assistant", "developer", "tool", ""};
  std::vector<serving::ChatMessage> messages;
  while (messages.size() < 64) {
    const uint8_t r = in.byte();
    std::string_view content = in.field();
    if (content.empty() && r == 0) break;
    serving::ChatMessage m;
    m.role = r < 0xF0 ? kRoles[r % 6] : std::string(in.field());  // rare: a made-up role
    m.content = std::string(content);
    messages.push_back(std::move(m));
  }
  auto rendered = serving::render_chat_marked(*t, messages);
  if (!rendered.ok()) return 0;
  size_t last = 0;
  for (const TextSpan& s : rendered->literal) {
    if (s.begin < last || s.end <= s.begin || s.end > rendered->text.size()) {
      std::fprintf(stderr, "fuzz_chat_template: bad client range [%zu, %zu)\n", s.begin, s.end);
      std::abort();
    }
    last = s.end;
  }
  if (t->jinja) return 0;
  const std::string* text = &rendered->text;
  for (const auto& m : messages) {
    if (text->find(m.content) == std::string::npos) {
      std::fprintf(stderr, "fuzz_chat_template: %s prompt lost a %s message's content\n",
                   serving::chat_family_name(t->family), m.role.c_str());
      std::abort();
    }
  }
  return 0;
}
