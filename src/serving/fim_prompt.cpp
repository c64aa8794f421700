#include "serving/fim_prompt.h"

namespace stride::serving {

Expected<std::vector<int32_t>> fim_prompt(const Tokenizer& tok, std::string_view prefix, std::string_view suffix,
                                          std::string_view middle) {
  const FimTokens fim = tok.fim_tokens();
  if (!fim.available()) {
    return Unsupported("this model's vocabulary has no fill-in-the-middle tokens (prefix, suffix, middle)");
  }
  std::vector<int32_t> out;
  if (tok.add_bos_default() && tok.bos_id() >= 0) out.push_back(tok.bos_id());
  auto append = [&](int32_t marker, std::string_view text) {
    out.push_back(marker);
    const std::vector<int32_t> ids = tok.encode(text, false, false);
    out.insert(out.end(), ids.begin(), ids.end());
  };
  append(fim.prefix, prefix);
  append(fim.suffix, suffix);
  append(fim.middle, middle);
  return out;
}

}  // namespace stride::serving
