#pragma once
// One worker's scratch for the kernels run on a ThreadPool (ggml's work
// buffer, per worker): the pool's owner owns it through the pool, one per
// worker index, so a kernel's buffers live as long as the engine's pool and
// are reused by every call, never allocated per call once grown, and never
// tied to an OS thread. Each kernel keeps its own scratch type T here (one
// object per type, made on first use: kernels that name the same type share
// the object, so a type is private to kernels that never overlap): get<T>()
// is an index and a null check. Only the worker that owns the index touches
// it during a dispatch.
#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace stride {

class alignas(64) WorkerScratch {
 public:
  template <class T>
  T& get() {
    const size_t id = slot_id<T>();
    if (id >= slots_.size()) slots_.resize(id + 1);
    std::unique_ptr<Slot>& s = slots_[id];
    if (!s) s = std::make_unique<Holder<T>>();
    return static_cast<Holder<T>*>(s.get())->value;
  }

 private:
  struct Slot {
    virtual ~Slot() = default;
  };
  template <class T>
  struct Holder final : Slot {
    T value{};
  };
  // Slot ids are handed out once per type, in first-use order, program-wide.
  static size_t next_id() {
    static std::atomic<size_t> n{0};
    return n.fetch_add(1, std::memory_order_relaxed);
  }
  template <class T>
  static size_t slot_id() {
    static const size_t id = next_id();
    return id;
  }

  std::vector<std::unique_ptr<Slot>> slots_;  // [slot id]
};

}  // namespace stride
