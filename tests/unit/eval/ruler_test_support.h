#pragma once
// What the RULER-suite tests share: SmolLM2's real tokenizer and chat
// template, and the long document of scripts/setup as the haystack, each
// loaded once per test binary. A missing file fails the test that needs it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "eval/ruler_haystack.h"
#include "eval/ruler_prompt.h"
#include "eval/ruler_tasks.h"
#include "loader/gguf_file.h"
#include "serving/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace stride::ruler_test {

inline const std::string kSmolPath = std::string(STRIDE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

inline std::string document_path() {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/stride/debian-reference.txt";
}

struct Smol {
  std::unique_ptr<GGUFFile> file;
  std::unique_ptr<Tokenizer> tok;
  serving::ChatTemplate chat;
};

// Null (and the test failed) when the model cannot be read.
inline const Smol* smol() {
  static const std::unique_ptr<Smol> loaded = [] {
    auto s = std::make_unique<Smol>();
    auto f = GGUFFile::open(kSmolPath);
    if (!f.ok()) return std::unique_ptr<Smol>();
    s->file = std::move(*f);
    auto t = Tokenizer::from_gguf(*s->file);
    auto c = serving::detect_chat_template(s->file->get_string_or("tokenizer.chat_template", ""), "llama");
    if (!t.ok() || !c.ok()) return std::unique_ptr<Smol>();
    s->tok = std::move(*t);
    s->chat = *c;
    return s;
  }();
  EXPECT_NE(loaded, nullptr) << "cannot load " << kSmolPath << " (scripts/setup fetches it)";
  return loaded.get();
}

inline const Haystack* document() {
  static const std::unique_ptr<Haystack> loaded = []() -> std::unique_ptr<Haystack> {
    std::ifstream f(document_path(), std::ios::binary);
    if (!f || !smol()) return nullptr;
    std::stringstream ss;
    ss << f.rdbuf();
    auto h = Haystack::from_text(ss.str(), *smol()->tok);
    return h.ok() ? std::make_unique<Haystack>(std::move(*h)) : nullptr;
  }();
  EXPECT_NE(loaded, nullptr) << "cannot read " << document_path()
                             << " (make it: python3 scripts/oracles/make_long_text.py)";
  return loaded.get();
}

inline PromptFormat smol_chat() {
  const serving::ChatTemplate t = smol()->chat;
  return PromptFormat::chat([t](const std::string& user) -> Expected<RenderedPrompt> {
    STRIDE_ASSIGN_OR_RETURN(serving::RenderedChat c, serving::render_chat_marked(t, {{"user", user}}));
    return RenderedPrompt{c.text, c.literal};
  });
}

// Tokens of the prompt text before byte `offset` (markup as control tokens).
inline int64_t tokens_before(const Tokenizer& tok, const std::string& text, size_t offset) {
  return (int64_t)tok.encode(std::string_view(text).substr(0, offset), tok.add_bos_default(), true).size();
}

}  // namespace stride::ruler_test
