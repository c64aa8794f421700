// tokenizer.json normalizer / pre_tokenizer / model -> PreTokenizerSpec.
#include "tokenizer/hf_json_pipeline.h"

#include <string>

#include "tokenizer/space_mark.h"

namespace stride {

using nlohmann::json;

const char* const kByteLevelRegex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

namespace {

const std::string kMark(kSpaceMark);  // "▁"

Status unsupported(const std::string& where, const json& node) {
  std::string type = "?";
  if (node.is_object() && node.contains("type") && node["type"].is_string()) {
    type = node["type"].get<std::string>();
  }
  return Unsupported("tokenizer.json " + where + " '" + type + "' is not supported");
}

std::string string_field(const json& node, const char* key, const std::string& fallback = "") {
  auto it = node.find(key);
  return it != node.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool bool_field(const json& node, const char* key, bool fallback) {
  auto it = node.find(key);
  return it != node.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// A regex that matches `literal` exactly.
std::string quote_regex(const std::string& literal) { return "\\Q" + literal + "\\E"; }

// Normalizers: only what SentencePiece-style BPE needs (Prepend "▁" and
// Replace " " -> "▁", as Llama 2 / Mistral files have).
Status apply_normalizer(const json& node, PreTokenizerSpec* spec) {
  if (node.is_null()) return Status::Ok();
  if (!node.is_object()) return Corrupt("tokenizer.json: normalizer is not an object");
  const std::string type = string_field(node, "type");
  if (type == "Sequence") {
    auto it = node.find("normalizers");
    if (it == node.end() || !it->is_array()) return Corrupt("tokenizer.json: Sequence normalizer without a list");
    for (const json& n : *it) STRIDE_RETURN_IF_ERROR(apply_normalizer(n, spec));
    return Status::Ok();
  }
  if (type == "Prepend" && string_field(node, "prepend") == kMark) {
    spec->prefix_space = true;
    return Status::Ok();
  }
  if (type == "Replace") {
    const json& pattern = node.value("pattern", json());
    if (pattern.is_object() && string_field(pattern, "String") == " " &&
        string_field(node, "content") == kMark) {
      spec->escape_whitespace = true;
      spec->byte_level = false;
      return Status::Ok();
    }
  }
  return unsupported("normalizer", node);
}

Status apply_pre_tokenizer(const json& node, PreTokenizerSpec* spec) {
  if (node.is_null()) return Status::Ok();
  if (!node.is_object()) return Corrupt("tokenizer.json: pre_tokenizer is not an object");
  const std::string type = string_field(node, "type");
  if (type == "Sequence") {
    auto it = node.find("pretokenizers");
    if (it == node.end() || !it->is_array()) return Corrupt("tokenizer.json: Sequence pre_tokenizer without a list");
    for (const json& n : *it) STRIDE_RETURN_IF_ERROR(apply_pre_tokenizer(n, spec));
    return Status::Ok();
  }
  if (type == "Split") {
    const json& pattern = node.value("pattern", json());
    std::string re;
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      re = pattern["Regex"].get<std::string>();
    } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
      re = quote_regex(pattern["String"].get<std::string>());
    } else {
      return Corrupt("tokenizer.json: Split pre_tokenizer without a pattern");
    }
    if (bool_field(node, "invert", false)) {
      return Unsupported("tokenizer.json Split pre_tokenizer with invert is not supported");
    }
    // The splitter keeps matches and the gaps between them as pieces
    // (Isolated); the merged behaviours become a regex whose matches are the
    // merged pieces.
    const std::string behavior = string_field(node, "behavior");
    if (behavior == "Isolated") {
      spec->regexes.push_back(re);
    } else if (behavior == "MergedWithPrevious") {
      spec->regexes.push_back("(?s:.*?)(?:" + re + "|\\z)");
    } else if (behavior == "MergedWithNext") {
      spec->regexes.push_back("(?s:(?:" + re + ")?(?:(?!(?:" + re + ")).)+|(?:" + re + "))");
    } else {
      return Unsupported("tokenizer.json Split behavior '" + behavior + "' is not supported");
    }
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    if (bool_field(node, "add_prefix_space", false)) {
      return Unsupported("tokenizer.json ByteLevel pre_tokenizer with add_prefix_space is not supported");
    }
    spec->byte_level = true;
    if (bool_field(node, "use_regex", true)) spec->regexes.push_back(kByteLevelRegex);
    return Status::Ok();
  }
  if (type == "Digits") {
    spec->regexes.push_back(bool_field(node, "individual_digits", false) ? "\\p{N}" : "\\p{N}+");
    return Status::Ok();
  }
  if (type == "Metaspace") {
    if (string_field(node, "replacement", kMark) != kMark) return unsupported("pre_tokenizer", node);
    spec->escape_whitespace = true;
    spec->byte_level = false;
    // Older files say add_prefix_space; newer ones prepend_scheme.
    std::string scheme = string_field(node, "prepend_scheme", "");
    if (scheme.empty()) scheme = bool_field(node, "add_prefix_space", true) ? "always" : "never";
    spec->prefix_space_unless_space = true;
    if (scheme == "always") {
      spec->prefix_space = true;
    } else if (scheme == "first") {
      spec->prefix_space_first_only = true;
    } else if (scheme != "never") {
      return Unsupported("tokenizer.json Metaspace prepend_scheme '" + scheme + "' is not supported");
    }
    // split: every "▁" starts a new word.
    if (bool_field(node, "split", true)) {
      spec->regexes.push_back(kMark + "[^" + kMark + "]*|[^" + kMark + "]+");
    }
    return Status::Ok();
  }
  return unsupported("pre_tokenizer", node);
}

}  // namespace

Expected<PreTokenizerSpec> spec_from_tokenizer_json(const json& root) {
  PreTokenizerSpec spec;
  spec.byte_level = false;  // until a ByteLevel pre-tokenizer says otherwise
  const json& model = root.value("model", json());
  if (!model.is_object()) return Corrupt("tokenizer.json: missing 'model' object");
  if (string_field(model, "type") != "BPE") return unsupported("model", model);
  if (!string_field(model, "continuing_subword_prefix").empty() ||
      !string_field(model, "end_of_word_suffix").empty()) {
    return Unsupported("tokenizer.json BPE with a subword prefix or word suffix is not supported");
  }
  STRIDE_RETURN_IF_ERROR(apply_normalizer(root.value("normalizer", json()), &spec));
  STRIDE_RETURN_IF_ERROR(apply_pre_tokenizer(root.value("pre_tokenizer", json()), &spec));
  if (spec.byte_level && spec.escape_whitespace) {
    return Unsupported("tokenizer.json mixes ByteLevel with Metaspace / space replacement");
  }
  spec.ignore_merges = bool_field(model, "ignore_merges", false);
  spec.unk_fallback = !spec.byte_level && !bool_field(model, "byte_fallback", false);
  return spec;
}

}  // namespace stride
