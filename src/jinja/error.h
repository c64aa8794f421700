#pragma once
// The error that unwinds a template render from the point of failure to the
// module boundary (template.cpp), where it becomes a Status. It never leaves
// src/jinja/: every public entry point catches it.
#include <stdexcept>
#include <string>

namespace stride::jinja {

enum class ErrorKind { Syntax, Runtime, Raised, Limit };

struct JinjaError : std::runtime_error {
  ErrorKind kind;
  JinjaError(ErrorKind k, const std::string& message) : std::runtime_error(message), kind(k) {}
};

[[noreturn]] inline void fail(const std::string& message) { throw JinjaError(ErrorKind::Runtime, message); }

}  // namespace stride::jinja
