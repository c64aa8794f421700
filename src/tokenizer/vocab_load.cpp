// Loading and validating tokenizer.ggml.* metadata into a Vocab.
#include <algorithm>
#include <span>
#include <string_view>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace stride {

namespace {

constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";

uint32_t attr_from_type(int64_t type) {
  switch (type) {
    case 1: return kAttrNormal;
    case 2: return kAttrUnknown;
    case 3: return kAttrControl;
    case 4: return kAttrUserDefined;
    case 5: return kAttrUnused;
    case 6: return kAttrByte;
    default: return kAttrUndefined;
  }
}

// Optional special id: absent keeps `*id`; present must be inside the vocabulary.
Status read_special_id(const GGUFFile& f, const std::string& key, int n_vocab, int32_t* id) {
  if (!f.has(key)) return Status::Ok();
  auto v = f.get_int(key);
  if (!v.ok()) return v.status();
  if (*v < 0 || *v >= n_vocab) {
    return InvalidArgument("GGUF metadata '" + key + "' = " + std::to_string(*v) +
                           " is outside the vocabulary (" + std::to_string(n_vocab) + " tokens)");
  }
  *id = static_cast<int32_t>(*v);
  return Status::Ok();
}

// Texts llama.cpp treats as end-of-generation (and forces to control type).
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>", "[e~["};
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>",
    "<end_of_utterance>"};
// FIM pad / repo / file-separator tokens also end generation in llama.cpp.
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>",
                                                              "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {
    "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
// Qwen2.5-Coder / StarCoder / CodeLlama (SentencePiece) spellings.
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>",
                                             "\xE2\x96\x81<PRE>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>",
                                             "\xE2\x96\x81<SUF>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>",
                                             "\xE2\x96\x81<MID>"};

// The lowest id among the tokens whose text is in `list`, or -1.
int32_t first_with_text(const Vocab& v, std::span<const std::string_view> list) {
  int32_t best = -1;
  for (std::string_view t : list) {
    const int32_t id = v.find(t);
    if (id >= 0 && (best < 0 || id < best)) best = id;
  }
  return best;
}

Status load_arrays(const GGUFFile& f, Vocab* v) {
  auto tokens = f.get_string_array(kTokens);
  if (!tokens.ok()) return tokens.status();
  if (tokens->empty()) return InvalidArgument(std::string("GGUF metadata '") + kTokens + "' is empty");
  if (tokens->size() > static_cast<size_t>(INT32_MAX)) return InvalidArgument("vocabulary too large");
  v->text = std::move(*tokens);
  const size_t n = v->text.size();

  v->score.assign(n, 0.0f);
  if (f.has(kScores) || v->type == VocabType::kSpm) {
    auto scores = f.get_float_array(kScores);
    if (!scores.ok()) return scores.status();
    if (scores->size() != n) {
      return InvalidArgument(std::string("GGUF metadata '") + kScores + "' has " +
                             std::to_string(scores->size()) + " entries but '" + kTokens +
                             "' has " + std::to_string(n));
    }
    v->score = std::move(*scores);
  }

  v->attr.assign(n, kAttrNormal);
  if (f.has(kTypes)) {
    auto types = f.get_int_array(kTypes);
    if (!types.ok()) return types.status();
    if (types->size() != n) {
      return InvalidArgument(std::string("GGUF metadata '") + kTypes + "' has " +
                             std::to_string(types->size()) + " entries but '" + kTokens +
                             "' has " + std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) v->attr[i] = attr_from_type((*types)[i]);
  }

  v->token_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (v->text[i].empty()) v->text[i] = "[EMPTY_" + std::to_string(i) + "]";
    v->token_to_id[v->text[i]] = static_cast<int32_t>(i);
  }

  if (v->type == VocabType::kBpe) {
    auto merges = f.get_string_array(kMerges);
    if (!merges.ok()) return merges.status();
    v->merge_rank.reserve(merges->size());
    for (size_t i = 0; i < merges->size(); ++i) {
      const std::string& m = (*merges)[i];
      const size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) continue;  // llama.cpp files it under ("", "")
      v->add_merge(std::string_view(m).substr(0, sp), std::string_view(m).substr(sp + 1),
                   static_cast<int32_t>(i));
    }
  }
  return Status::Ok();
}

Status load_special_ids(const GGUFFile& f, Vocab* v) {
  const int n = v->n_vocab();
  if (v->type == VocabType::kSpm) {
    // llama.cpp's defaults for SentencePiece vocabularies, if they fit.
    v->bos = n > 1 ? 1 : -1;
    v->eos = n > 2 ? 2 : -1;
    v->unk = 0;
  }
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.bos_token_id", n, &v->bos));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.eos_token_id", n, &v->eos));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.unknown_token_id", n, &v->unk));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.eot_token_id", n, &v->eot));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.eom_token_id", n, &v->eom));
  FimTokenIds fim;
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.fim_pad_token_id", n, &fim.pad));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.fim_rep_token_id", n, &fim.rep));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.fim_sep_token_id", n, &fim.sep));
  // The older names first; the fim_* keys, when present, win.
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.prefix_token_id", n, &fim.pre));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.suffix_token_id", n, &fim.suf));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.middle_token_id", n, &fim.mid));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.fim_pre_token_id", n, &fim.pre));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.fim_suf_token_id", n, &fim.suf));
  STRIDE_RETURN_IF_ERROR(read_special_id(f, "tokenizer.ggml.fim_mid_token_id", n, &fim.mid));

  if (f.has("tokenizer.ggml.add_bos_token")) {
    auto b = f.get_bool("tokenizer.ggml.add_bos_token");
    if (!b.ok()) return b.status();
    v->add_bos = *b;
  }
  if (v->pre == "gemma4") v->add_bos = true;  // as llama.cpp: Gemma 4 files may say otherwise
  if (v->add_bos && v->bos < 0) {
    return InvalidArgument("tokenizer adds BOS but has no tokenizer.ggml.bos_token_id");
  }

  detect_special_tokens(v, fim);
  return Status::Ok();
}

}  // namespace

void detect_special_tokens(Vocab* v, FimTokenIds fim) {
  int32_t fim_pad = fim.pad, fim_rep = fim.rep, fim_sep = fim.sep;
  // Auto-detection by text, as llama.cpp does; detected tokens become control.
  const auto mark_control = [&](int32_t id) {
    if (id >= 0) v->attr[id] |= kAttrControl;
  };
  if (v->eot < 0) v->eot = first_with_text(*v, kEotTexts);
  constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
  if (v->eom < 0) v->eom = first_with_text(*v, kEomTexts);
  if (fim_pad < 0) fim_pad = first_with_text(*v, kFimPadTexts);
  if (fim_rep < 0) fim_rep = first_with_text(*v, kFimRepTexts);
  if (fim_sep < 0) fim_sep = first_with_text(*v, kFimSepTexts);
  v->fim_pre = fim.pre >= 0 ? fim.pre : first_with_text(*v, kFimPreTexts);
  v->fim_suf = fim.suf >= 0 ? fim.suf : first_with_text(*v, kFimSufTexts);
  v->fim_mid = fim.mid >= 0 ? fim.mid : first_with_text(*v, kFimMidTexts);
  for (int32_t id : {v->eot, v->eom, fim_pad, fim_rep, fim_sep}) mark_control(id);
  for (auto texts : {std::span<const std::string_view>(kFimPreTexts), std::span<const std::string_view>(kFimSufTexts),
                     std::span<const std::string_view>(kFimMidTexts)}) {
    for (std::string_view t : texts) mark_control(v->find(t));
  }

  for (int32_t id : {fim_pad, fim_rep, fim_sep}) {
    if (id >= 0) v->eog.insert(id);
  }
  for (std::string_view t : kEogTexts) {
    const int32_t id = v->find(t);
    if (id >= 0) {
      v->eog.insert(id);
      mark_control(id);
    }
  }
  // gpt-oss: these are always rendered.
  constexpr std::string_view kAlwaysRendered[] = {"<|channel|>", "<|message|>", "<|start|>",
                                                   "<|constrain|>"};
  for (std::string_view t : kAlwaysRendered) {
    const int32_t id = v->find(t);
    if (id >= 0) v->attr[id] = kAttrUserDefined;
  }
  for (int32_t id : {v->eos, v->eot, v->eom}) {
    if (id >= 0) v->eog.insert(id);
  }
  // o200k_harmony / solar-open: "<|end|>" is not end-of-generation there.
  const auto in_eog = [&](std::string_view t) {
    const int32_t id = v->find(t);
    return id >= 0 && v->eog.count(id) != 0;
  };
  if (in_eog("<|end|>") && ((in_eog("<|return|>") && in_eog("<|call|>")) ||
                            (in_eog("<|calls|>") && in_eog("<|flush|>")))) {
    const int32_t end = v->find("<|end|>");
    v->eog.erase(end);
    v->attr[end] = kAttrUserDefined;
  }
  // gemma4 / plamo: "</s>" is an ordinary token.
  if (in_eog("</s>") && (in_eog("<|tool_response>") || in_eog("<|plamo:eos|>"))) {
    const int32_t s = v->find("</s>");
    v->eog.erase(s);
    v->attr[s] = kAttrNormal;
  }
}

void order_special_tokens(Vocab* v) {
  v->special_tokens.clear();
  for (int32_t id = 0; id < v->n_vocab(); ++id) {
    if (v->attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) v->special_tokens.push_back(id);
  }
  std::stable_sort(v->special_tokens.begin(), v->special_tokens.end(), [&](int32_t a, int32_t b) {
    return v->text[a].size() > v->text[b].size();
  });
}

int32_t Vocab::find_merge(std::string_view left, std::string_view right) const {
  thread_local std::string key;
  key.assign(left);
  key.push_back('\xFF');
  key.append(right);
  auto it = merge_rank.find(key);
  return it == merge_rank.end() ? -1 : it->second;
}

Expected<Vocab> load_vocab(const GGUFFile& f) {
  Vocab v;
  auto model = f.get_string("tokenizer.ggml.model");
  if (!model.ok()) return model.status();
  v.pre = f.get_string_or("tokenizer.ggml.pre", "");
  if (*model == "llama") {
    v.type = VocabType::kSpm;
    v.add_bos = true;
    v.add_space_prefix = true;
  } else if (*model == "gpt2" || *model == "gemma4") {
    v.type = VocabType::kBpe;
    if (*model == "gemma4") v.pre = "gemma4";  // SentencePiece-style BPE, whatever the file says
    auto spec = lookup_pre_tokenizer(v.pre);
    if (!spec.ok()) return spec.status();
    v.add_bos = spec->add_bos;
  } else {
    return Unsupported("tokenizer.ggml.model '" + *model +
                       "' is not supported (supported: llama, gpt2, gemma4)");
  }
  if (f.has("tokenizer.ggml.add_space_prefix")) {
    auto b = f.get_bool("tokenizer.ggml.add_space_prefix");
    if (!b.ok()) return b.status();
    // BPE models never prefix a space in llama.cpp's tokenizer path.
    if (v.type == VocabType::kSpm) v.add_space_prefix = *b;
  }

  STRIDE_RETURN_IF_ERROR(load_arrays(f, &v));
  STRIDE_RETURN_IF_ERROR(load_special_ids(f, &v));

  order_special_tokens(&v);
  return v;
}

}  // namespace stride
