#pragma once
// The vocabulary shared by both tokenizers: token texts, scores, attributes,
// special ids and the end-of-generation set, loaded and validated from GGUF
// metadata with llama.cpp's rules (defaults per model, auto-detected EOG tokens).
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "loader/gguf_file.h"

namespace stride {

// Token attributes (bit flags, as llama.cpp's llama_token_attr).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
};

enum class VocabType { kSpm, kBpe };

// Hash that lets unordered_map<std::string, ...> be probed with a string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct Vocab {
  VocabType type = VocabType::kSpm;
  std::string pre;  // tokenizer.ggml.pre ("" when absent)

  std::vector<std::string> text;  // [n_vocab]
  std::vector<float> score;       // [n_vocab]
  std::vector<uint32_t> attr;     // [n_vocab] TokenAttr bits
  TokenIndex token_to_id;         // a text that occurs twice maps to its last id

  // BPE merges: "left\xFFright" -> rank (the first occurrence wins).
  TokenIndex merge_rank;

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1;
  // Fill-in-the-middle: prefix, suffix and middle markers (-1: none).
  int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1;
  bool add_bos = false;
  bool add_space_prefix = false;
  std::unordered_set<int32_t> eog;

  // Control, user-defined and unknown tokens, longest text first: the order in
  // which llama.cpp cuts them out of the input.
  std::vector<int32_t> special_tokens;

  int n_vocab() const { return static_cast<int>(text.size()); }
  bool valid_id(int32_t id) const { return id >= 0 && id < n_vocab(); }
  int32_t find(std::string_view s) const {
    auto it = token_to_id.find(s);
    return it == token_to_id.end() ? -1 : it->second;
  }
  int32_t find_merge(std::string_view left, std::string_view right) const;
  // Records the merge (left, right) at `rank` unless the pair already has one.
  void add_merge(std::string_view left, std::string_view right, int32_t rank) {
    std::string key;
    key.reserve(left.size() + right.size() + 1);
    key.append(left).push_back('\xFF');
    key.append(right);
    merge_rank.try_emplace(std::move(key), rank);
  }
};

// Reads tokenizer.ggml.* from a GGUF file. Errors name the offending key.
Expected<Vocab> load_vocab(const GGUFFile& file);

// Fill-in-the-middle token ids a file names explicitly (-1 when it does not).
struct FimTokenIds {
  int32_t pad = -1, rep = -1, sep = -1;
  int32_t pre = -1, suf = -1, mid = -1;
};
// llama.cpp's detection by text once the ids a file names are set: EOT/EOM,
// FIM and end-of-generation tokens (made control), and the model-specific
// exceptions (gpt-oss "<|end|>", Gemma 4 "</s>").
void detect_special_tokens(Vocab* v, FimTokenIds fim);
// Fills special_tokens from the attributes, longest text first.
void order_special_tokens(Vocab* v);

}  // namespace stride
