#pragma once
// Splits a template into text and tag tokens with Jinja2's whitespace rules as
// transformers configures them: trim_blocks and lstrip_blocks on, `-` strips
// all whitespace on its side of a tag, `+` keeps it, one trailing newline of
// the source is dropped and line endings become "\n".
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stride::jinja {

enum class TokenType { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  TokenType type = TokenType::Eof;
  std::string text;  // text, name, operator, or the decoded string literal
  int64_t int_value = 0;
  double float_value = 0.0;
  size_t line = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws JinjaError(Syntax) on an unterminated tag, comment or string.
std::vector<Token> tokenize(std::string_view source, const LexOptions& options = {});

}  // namespace stride::jinja
