// The pre-tokenizer regex table, keyed by tokenizer.ggml.pre. The regex strings
// are the ones llama.cpp uses (derived from each model's tokenizer.json); the
// order of the sequence matters.
#include <initializer_list>
#include <string_view>

#include "tokenizer/pre_tokenizer.h"

namespace stride {

namespace {

// 's|'t|... with case-insensitive contractions, letters, 1-3 digits, punctuation, newlines.
const char* const kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen35 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
// gpt-4o (o200k) and tekken: the regexes of the published tokenizer.json files.
// llama.cpp rewrites the case classes as ASCII look-aheads because its regex
// engine lacks \p{Lu}; PCRE2 has them, so stride splits exactly as the
// Hugging Face tokenizer does (also for non-ASCII capitals).
const char* const kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kTekken =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kPoro = " ?[^(\\s|.,!?…。，、।۔،)]+";
const char* const kDeepseekLlmLetters =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";

bool is_one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (s == n) return true;
  }
  return false;
}

}  // namespace

Expected<PreTokenizerSpec> lookup_pre_tokenizer(const std::string& pre) {
  PreTokenizerSpec s;
  if (pre.empty() || pre == "default") {
    s.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
  } else if (is_one_of(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                             "midm-2.0", "lfm2", "jina-v5-nano"})) {
    s.regexes = {kLlama3};
    s.ignore_merges = true;
    s.add_bos = true;
  } else if (is_one_of(pre, {"dbrx", "smaug-bpe", "chatglm-bpe"})) {
    s.regexes = {kLlama3};
  } else if (is_one_of(pre, {"glm4", "glm5"})) {
    s.regexes = {kLlama3};
    s.ignore_merges = true;
  } else if (pre == "deepseek-llm") {
    s.regexes = {"[\r\n]", kDeepseekLlmLetters,
                 "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"};
  } else if (is_one_of(pre, {"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"})) {
    s.regexes = {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
                 "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
                 "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"};
  } else if (pre == "deepseek-coder") {
    s.regexes = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"};
  } else if (pre == "falcon") {
    s.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"};
  } else if (is_one_of(pre, {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone",
                             "minerva-7b", "mellum2"})) {
    s.regexes = {"\\p{N}", kGpt2};
  } else if (is_one_of(pre, {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
                             "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "mpt", "olmo",
                             "jais", "trillion", "granite-docling", "exaone4", "jina-v1-en",
                             "jina-v2-code", "roberta-bpe"})) {
    s.regexes = {kGpt2};
  } else if (is_one_of(pre, {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez",
                             "stablelm2", "hunyuan", "solar-open"})) {
    s.regexes = {kQwen2};
  } else if (pre == "qwen35") {
    s.regexes = {kQwen35};
  } else if (is_one_of(pre, {"poro-chat", "bloom", "gpt3-finnish"})) {
    s.regexes = {kPoro};
  } else if (pre == "viking") {
    s.regexes = {kPoro, "\\p{N}"};
  } else if (pre == "tekken") {
    s.regexes = {kTekken};
    s.ignore_merges = true;
    s.add_bos = true;
  } else if (is_one_of(pre, {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"})) {
    s.regexes = {kGpt4o};
  } else if (pre == "gemma4") {
    // SentencePiece-style BPE over the whole text, cut only at newlines.
    s.regexes = {"[^\\n]+|[\\n]+"};
    s.byte_level = false;
    s.escape_whitespace = true;
    s.newline_words_whole = true;
    s.add_bos = true;
  } else if (pre == "chameleon") {
    s.regexes = {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
                 "\\p{N}", "[\\p{P}!-/:-@\\[-`{-~]", kGpt2};
    s.add_bos = true;
  } else {
    return Unsupported("unknown pre-tokenizer type tokenizer.ggml.pre = '" + pre + "'");
  }
  return s;
}

}  // namespace stride
