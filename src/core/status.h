#pragma once
// Status / Expected<T>: how failures cross module boundaries.
// Expected failures (bad files, exhausted KV, bad input) are values, never exceptions.
#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace stride {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // caller passed something malformed
  kNotFound,          // file, key or tensor missing
  kCorrupt,           // file content violates its format
  kUnsupported,       // valid input that stride cannot run (type, architecture)
  kIoError,           // OS-level failure
  kResourceExhausted, // KV pool full, budget exceeded: caller may preempt or reject
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace stride

// Propagate a failed Status / Expected from the current function.
#define STRIDE_RETURN_IF_ERROR(expr)             \
  do {                                           \
    ::stride::Status _st = (expr);               \
    if (!_st.ok()) return _st;                   \
  } while (0)

#define STRIDE_CONCAT_INNER(a, b) a##b
#define STRIDE_CONCAT(a, b) STRIDE_CONCAT_INNER(a, b)
#define STRIDE_ASSIGN_OR_RETURN(lhs, expr) \
  STRIDE_ASSIGN_OR_RETURN_IMPL(STRIDE_CONCAT(_exp_, __LINE__), lhs, expr)
#define STRIDE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
