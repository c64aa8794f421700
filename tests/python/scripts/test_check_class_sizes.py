"""scripts/check_class_sizes: its count against C++'s own definition of a
member function (hand-counted below, tricky declarations included), and
the project's limit of about 25 methods per class over src/."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "check_class_sizes"

# Every line marked M declares one member function; nothing else does.
WIDGET = r"""
#pragma once
#include <atomic>
#define WIDGET_LIMIT(x) { x }
namespace demo {
struct Limits { int a, b; };
class [[nodiscard]] Widget final : public Base {
 public:
  Widget() = default;                                              // M
  explicit Widget(int n) : n_(n), limits_(Limits{n, 2}), parts_{1, 2} {}  // M
  Widget(const Widget&) = delete;
  ~Widget() override;                                              // M
  Widget& operator=(Widget&&) noexcept;                            // M
  bool operator<(const Widget& o) const { return n_ < o.n_; }     // M
  int operator()(int x) const { return x; }                        // M
  explicit operator bool() const { return n_ != 0; }               // M
  template <typename F>
  void each(F&& f) { f(n_); }                                      // M
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  Widget(I i) : n_(static_cast<int>(i)) {}                         // M
  static Widget make(std::function<int(int)> fn);                  // M
  auto size() const -> std::size_t { return 0; }                   // M
  [[nodiscard]] int n() const noexcept { return n_; }              // M
  friend bool operator==(const Widget&, const Widget&);
  using Base::Base;
  struct Part {
    int get() const { return 1; }                                  // M (Part)
  };
  enum class Mode { A, B };
 private:
  int n_ = 0;
  Limits limits_;
  int parts_[2]{};
  std::function<void(int)> on_change_;
  void (*callback_)(int) = nullptr;
  alignas(64) std::atomic<int> next_{0};
  std::vector<int> sizes_ = std::vector<int>(3);
  const char* name_ = "a{b}(c); int f();";
  static constexpr int kLimit = 1'000;
  std::function<int()> lazy_ = [] { return 1; };
#if defined(OTHER)
  char tag_ = '{';
#endif
};
}  // namespace demo
"""


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def counts(out):
    rows = {}
    for line in out.splitlines():
        n, name = line.split()[:2]
        rows[name] = int(n)
    return rows


def test_counts_member_functions_as_cpp_defines_them(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "widget.h").write_text(WIDGET)
    got = run("--top", "10", "--max", "100", str(src))
    assert got.returncode == 0, got.stderr
    marked = WIDGET.count("// M\n")
    assert counts(got.stdout) == {"Widget": marked, "Part": 1, "Limits": 0}
    assert marked == 12


def test_exits_1_naming_the_class_over_the_limit(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "widget.h").write_text(WIDGET)
    assert run("--max", "12", str(src)).returncode == 0
    over = run("--max", "11", str(src))
    assert over.returncode == 1
    assert "Widget" in over.stderr and "Part" not in over.stderr


def test_no_class_in_src_declares_more_than_25_methods():
    got = run("--max", "25", "--top", "5")
    assert got.returncode == 0, got.stdout + got.stderr
