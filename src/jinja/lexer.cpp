#include "jinja/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "jinja/error.h"
#include "jinja/str.h"

namespace stride::jinja {
namespace {

[[noreturn]] void syntax_error(const std::string& what, size_t line) {
  throw JinjaError(ErrorKind::Syntax, what + " (line " + std::to_string(line) + ")");
}

// Python's str.splitlines() + "\n".join(): every line boundary becomes "\n"
// and one trailing newline goes (keep_trailing_newline=False).
std::string normalize_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\r') {
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out += '\n';
    } else if (c == '\n' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E)) {
      out += '\n';
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) {
      out += '\n';
      ++i;
    } else if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += '\n';
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string rstrip_space(const std::string& s) {
  size_t end = s.size();
  while (size_t n = python_space_before(s, end)) end -= n;
  return s.substr(0, end);
}

bool all_space(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();) {
    const size_t n = python_space_at(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

class Lexer {
 public:
  Lexer(std::string src, const LexOptions& o) : src_(std::move(src)), opts_(o) {}

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos <= src_.size()) {
      const size_t open = find_open(pos);
      std::string text = src_.substr(pos, (open == std::string::npos ? src_.size() : open) - pos);
      if (open == std::string::npos) {
        emit_text(std::move(text), pos);
        break;
      }
      const char kind = src_[open + 1];
      const char ctrl = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (ctrl == '-') {
        text = rstrip_space(text);
      } else if (ctrl != '+' && kind != '{' && opts_.lstrip_blocks) {
        const size_t l_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((l_pos > 0 || line_starting) && all_space(std::string_view(text).substr(l_pos))) text.resize(l_pos);
      }
      emit_text(std::move(text), pos);
      size_t after = open + 2 + ((ctrl == '-' || ctrl == '+') ? 1 : 0);
      line_ = line_at(open);
      if (kind == '#') {
        pos = close_comment(after, &line_starting);
      } else if (kind == '%' && is_raw(after)) {
        pos = lex_raw(after, &line_starting);
      } else {
        pos = lex_tag(kind == '{', after, &line_starting);
      }
    }
    tokens_.push_back(Token{TokenType::Eof, "", 0, 0.0, line_at(src_.size())});
    return std::move(tokens_);
  }

 private:
  size_t find_open(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  size_t line_at(size_t pos) {
    for (; line_pos_ < pos && line_pos_ < src_.size(); ++line_pos_) line_count_ += src_[line_pos_] == '\n';
    return line_count_;
  }

  void emit_text(std::string text, size_t at) {
    if (text.empty()) return;
    tokens_.push_back(Token{TokenType::Text, std::move(text), 0, 0.0, line_at(at)});
  }

  // After a closing delimiter: `-` eats all following whitespace, trim_blocks one newline.
  size_t after_close(size_t pos, bool dash, bool plus, bool block_like, bool* line_starting) {
    if (dash) {
      size_t p = pos;
      while (p < src_.size()) {
        const size_t n = python_space_at(src_, p);
        if (!n) break;
        p += n;
      }
      *line_starting = p > pos && src_[p - 1] == '\n';
      return p;
    }
    if (block_like && !plus && opts_.trim_blocks && pos < src_.size() && src_[pos] == '\n') {
      *line_starting = true;
      return pos + 1;
    }
    *line_starting = false;
    return pos;
  }

  // {% raw %}: after the opener, "raw" and the tag's end.
  bool is_raw(size_t pos) const {
    while (pos < src_.size() && (src_[pos] == ' ' || src_[pos] == '\t' || src_[pos] == '\n')) ++pos;
    if (src_.compare(pos, 3, "raw") != 0) return false;
    pos += 3;
    while (pos < src_.size() && (src_[pos] == ' ' || src_[pos] == '\t' || src_[pos] == '\n')) ++pos;
    return src_.compare(pos, 2, "%}") == 0 || src_.compare(pos, 3, "-%}") == 0;
  }

  // The text up to {% endraw %}, verbatim (whitespace control still applies).
  size_t lex_raw(size_t pos, bool* line_starting) {
    const size_t close = src_.find("%}", pos);
    const bool dash = src_[close - 1] == '-';
    size_t body = after_close(close + 2, dash, false, true, line_starting);
    for (size_t open = src_.find("{%", body); open != std::string::npos; open = src_.find("{%", open + 2)) {
      size_t p = open + 2;
      const char ctrl = p < src_.size() ? src_[p] : '\0';
      if (ctrl == '-' || ctrl == '+') ++p;
      while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n')) ++p;
      if (src_.compare(p, 6, "endraw") != 0) continue;
      p += 6;
      while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n')) ++p;
      const bool end_dash = src_.compare(p, 3, "-%}") == 0;
      if (!end_dash && src_.compare(p, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, open - body);
      if (ctrl == '-') {
        text = rstrip_space(text);
      } else if (ctrl != '+' && opts_.lstrip_blocks) {
        const size_t l_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (l_pos > 0 && all_space(std::string_view(text).substr(l_pos))) text.resize(l_pos);
      }
      emit_text(std::move(text), body);
      return after_close(p + (end_dash ? 3 : 2), end_dash, false, true, line_starting);
    }
    syntax_error("missing end of raw directive", line_);
  }

  size_t close_comment(size_t pos, bool* line_starting) {
    const size_t end = src_.find("#}", pos);
    if (end == std::string::npos) syntax_error("missing end of comment tag", line_);
    const bool dash = end > pos && src_[end - 1] == '-';
    const bool plus = end > pos && src_[end - 1] == '+';
    return after_close(end + 2, dash, plus, true, line_starting);
  }

  size_t lex_tag(bool is_var, size_t pos, bool* line_starting) {
    tokens_.push_back(Token{is_var ? TokenType::VarBegin : TokenType::BlockBegin, "", 0, 0.0, line_});
    int depth = 0;  // brackets: "}}" inside {{ {'a': {'b': 1}} }} does not close the tag
    while (true) {
      while (pos < src_.size() && std::strchr(" \t\n\r\f\v", src_[pos]) && src_[pos] != '\0') ++pos;
      if (pos >= src_.size()) syntax_error(is_var ? "unexpected end of template, expected '}}'" :
                                                    "unexpected end of template, expected '%}'", line_);
      const std::string_view rest = std::string_view(src_).substr(pos);
      const char* close = is_var ? "}}" : "%}";
      if (depth == 0) {
        const bool dash = rest.size() >= 3 && rest[0] == '-' && rest.substr(1, 2) == close;
        const bool plus = !is_var && rest.size() >= 3 && rest[0] == '+' && rest.substr(1, 2) == close;
        if (dash || plus || rest.substr(0, 2) == close) {
          tokens_.push_back(Token{is_var ? TokenType::VarEnd : TokenType::BlockEnd, "", 0, 0.0, line_at(pos)});
          return after_close(pos + 2 + (dash || plus), dash, plus, !is_var, line_starting);
        }
      }
      pos = lex_one(pos, &depth);
    }
  }

  size_t lex_one(size_t pos, int* depth) {
    const char c = src_[pos];
    Token t;
    t.line = line_at(pos);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos;
      while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
      t.type = TokenType::Name;
      t.text = src_.substr(pos, e - pos);
      tokens_.push_back(std::move(t));
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(pos, std::move(t));
    if (c == '\'' || c == '"') return lex_string(pos, std::move(t));
    static const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "(", ")",
                                 "[", "]", "{", "}", ",", ".", ":", "|", "=", "<", ">"};
    for (const char* op : kOps) {
      const size_t n = std::strlen(op);
      if (src_.compare(pos, n, op) == 0) {
        if (std::strchr("([{", op[0]) && n == 1) ++*depth;
        if (std::strchr(")]}", op[0]) && n == 1) --*depth;
        t.type = TokenType::Op;
        t.text = op;
        tokens_.push_back(std::move(t));
        return pos + n;
      }
    }
    syntax_error(std::string("unexpected character '") + c + "'", t.line);
  }

  size_t lex_number(size_t pos, Token t) {
    size_t e = pos;
    bool is_float = false;
    auto digits = [&] {
      while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
    };
    digits();
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t k = e + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        is_float = true;
        e = k;
        digits();
      }
    }
    std::string num;
    for (size_t i = pos; i < e; ++i) {
      if (src_[i] != '_') num += src_[i];
    }
    t.text = num;
    if (is_float) {
      t.type = TokenType::Float;
      t.float_value = std::strtod(num.c_str(), nullptr);
    } else {
      t.type = TokenType::Int;
      errno = 0;
      t.int_value = std::strtoll(num.c_str(), nullptr, 10);
      if (errno == ERANGE) syntax_error("integer literal too large", t.line);
    }
    tokens_.push_back(std::move(t));
    return e;
  }

  size_t lex_string(size_t pos, Token t) {
    const char q = src_[pos];
    std::string out;
    size_t i = pos + 1;
    for (; i < src_.size() && src_[i] != q; ++i) {
      if (src_[i] != '\\' || i + 1 >= src_.size()) {
        out += src_[i];
        continue;
      }
      const char e = src_[++i];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case 'a': out += '\a'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n >= src_.size()) syntax_error("truncated escape in string", t.line);
          const uint32_t cp = static_cast<uint32_t>(std::strtoul(src_.substr(i + 1, n).c_str(), nullptr, 16));
          append_utf8(out, cp);
          i += n;
          break;
        }
        default:
          out += '\\';
          out += e;
      }
    }
    if (i >= src_.size()) syntax_error("unterminated string", t.line);
    t.type = TokenType::String;
    t.text = std::move(out);
    tokens_.push_back(std::move(t));
    return i + 1;
  }

  std::string src_;
  LexOptions opts_;
  std::vector<Token> tokens_;
  size_t line_ = 1;
  size_t line_pos_ = 0, line_count_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexOptions& options) {
  return Lexer(normalize_newlines(source), options).run();
}

}  // namespace stride::jinja
