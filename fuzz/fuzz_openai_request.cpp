// OpenAI request parsing and validation with a real tokenizer (the byte-level
// BPE fixture). The first byte picks the endpoint, the chat family and
// whether per-request attention is allowed; the rest is the request body, as
// the server parses it (no exceptions). parse_generation must not throw, and
// a request it accepts must fit the configured limits.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "http/openai_request.h"

namespace {

using namespace stride;

constexpr int64_t kContext = 4096;

struct Fixture {
  serving::ServeConfig cfg;
  std::vector<Expected<serving::ChatTemplate>> chats;
  PolicySpec attention;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    x.cfg.max_context_length = kContext;
    x.cfg.max_prompt_tokens = kContext;
    x.cfg.max_tokens_cap = 1024;
    for (const char* t : {"{{ '<|im_start|>system\nYou are helpful.<|im_end|>\n' }}<|im_start|>",
                          "<|start_header_id|>", "<start_of_turn>", "<|assistant|><|end|>",
                          "[INST] <<SYS>>", "[INST]", ""}) {
      x.chats.push_back(serving::detect_chat_template(t, "llama"));  // the last one: NotFound
    }
    x.attention = *parse_policy("dense");
    return x;
  }();
  return f;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_openai_request: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Fixture& fx = fixture();
  const Tokenizer& tok = *fuzz::load_tokenizer("ggml-vocab-gpt-2.gguf").tok;
  const uint8_t flags = data[0];
  const bool chat = flags & 1;
  serving::ServeConfig cfg = fx.cfg;
  cfg.allow_request_attention = flags & 2;

  const auto body = nlohmann::json::parse(data + 1, data + size, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;

  server::ParseContext ctx;
  ctx.cfg = &cfg;
  ctx.tok = &tok;
  ctx.chat = &fx.chats[(flags >> 2) % fx.chats.size()];
  ctx.model_id = "fuzz-model";
  ctx.attention = fx.attention;
  ctx.n_vocab = tok.n_vocab();
  ctx.body = std::string_view((const char*)data + 1, size - 1);

  server::GenerationCall call;
  const server::ApiError err = server::parse_generation(body, chat, ctx, call);
  if (!err.ok()) {
    if (err.status < 400 || err.status > 599) fail("an error with a non-error HTTP status");
    return 0;
  }
  const auto& r = call.req;
  if (r.prompt.empty()) fail("accepted an empty prompt");
  for (int32_t id : r.prompt) {
    if (id < 0 || id >= ctx.n_vocab) fail("accepted a token id outside the vocabulary");
  }
  if (r.max_tokens < 1 || r.max_tokens > cfg.max_tokens_cap) fail("max_tokens outside [1, cap]");
  if ((int64_t)r.prompt.size() + r.max_tokens > kContext) fail("prompt + max_tokens exceed the context");
  if (r.top_logprobs > 20) fail("top_logprobs above 20");
  if (call.tools.active() && !r.grammar) fail("tools offered without the call grammar");
  return 0;
}
