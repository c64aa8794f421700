// Chat template detection and rendering. Input fields (0x00-separated):
// template text, architecture, then (role byte + content) per message.
// A rendered prompt must contain every message's content unchanged.
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
  auto text = serving::render_chat(*t, messages);
  if (!text.ok()) return 0;
  for (const auto& m : messages) {
    if (text->find(m.content) == std::string::npos) {
      std::fprintf(stderr, "fuzz_chat_template: %s prompt lost a %s message's content\n",
                   serving::chat_family_name(t->family), m.role.c_str());
      std::abort();
    }
  }
  return 0;
}
