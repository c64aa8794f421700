#include "core/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace stride {

namespace {

uint64_t xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

// Linux hands out the 8 KiB tile data state only on request (the first tile
// instruction of a process that did not ask dies with SIGILL); granted for
// every thread of the process.
bool request_tile_data() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const unsigned max_leaf = a;
  char vendor[13] = {0};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  f.vendor = vendor;
  __get_cpuid(1, &a, &b, &c, &d);
  const bool osxsave = c & bit_OSXSAVE;
  f.fma = c & bit_FMA;
  f.f16c = c & bit_F16C;
  const bool avx = c & bit_AVX;
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  f.os_ymm = avx && (xcr0 & 0x6) == 0x6;          // SSE and AVX state
  f.os_zmm = f.os_ymm && (xcr0 & 0xe0) == 0xe0;  // opmask, zmm0-15 high, zmm16-31
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &c, &d);
    f.avx2 = b & bit_AVX2;
    f.avx512f = b & bit_AVX512F;
    f.avx512dq = b & bit_AVX512DQ;
    f.avx512bw = b & bit_AVX512BW;
    f.avx512vl = b & bit_AVX512VL;
    f.avx512vnni = c & (1u << 11);
    f.amx_bf16 = d & (1u << 22);
    f.amx_tile = d & (1u << 24);
    f.amx_int8 = d & (1u << 25);
    f.os_amx = f.amx_tile && (xcr0 & 0x60000) == 0x60000 && request_tile_data();
    __get_cpuid_count(7, 1, &a, &b, &c, &d);
    f.avx_vnni = a & (1u << 4);
    f.avx512bf16 = a & (1u << 5);
  }
  unsigned ext = 0;
  __get_cpuid(0x80000000, &ext, &b, &c, &d);
  if (ext >= 0x80000004) {
    char brand[49] = {0};
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &a, &b, &c, &d);
      std::memcpy(brand + 16 * i, &a, 4);
      std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &c, 4);
      std::memcpy(brand + 16 * i + 12, &d, 4);
    }
    f.brand = brand;
  }
  return f;
}

// Set when the AMX path failed its start-up check (disable_amx_path).
std::atomic<bool>& amx_disabled() {
  static std::atomic<bool> v{false};
  return v;
}

bool runs(const CpuFeatures& f, CpuPath p) {
  const bool avx2 = f.avx2 && f.fma && f.f16c && f.os_ymm;
  if (p == CpuPath::Avx2) return avx2;
  const bool avx512 = avx2 && f.os_zmm && f.avx512f && f.avx512vl && f.avx512bw && f.avx512dq && f.avx512vnni;
  if (p == CpuPath::Avx512) return avx512;
  return avx512 && f.amx_int8 && f.os_amx && !amx_disabled().load();
}

std::atomic<int> g_path{-1};
std::mutex g_mu;

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

const char* cpu_path_name(CpuPath p) {
  return p == CpuPath::Amx ? "amx" : p == CpuPath::Avx512 ? "avx512" : "avx2";
}

void disable_amx_path() {
  amx_disabled().store(true);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_path.load() == (int)CpuPath::Amx) g_path.store((int)CpuPath::Avx512);
}

std::vector<CpuPath> supported_cpu_paths() {
  std::vector<CpuPath> out;
  for (const CpuPath p : {CpuPath::Avx2, CpuPath::Avx512, CpuPath::Amx})
    if (runs(cpu_features(), p)) out.push_back(p);
  return out;
}

Expected<CpuPath> resolve_cpu_path(std::string_view requested) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (const int p = g_path.load(); p >= 0) return (CpuPath)p;
  const std::vector<CpuPath> ok = supported_cpu_paths();
  if (ok.empty())
    return Unsupported("this CPU (" + cpu_features().brand + ") lacks AVX2, FMA or F16C (or the OS does not "
                         "enable AVX state); stride's kernels need them");
  CpuPath want = ok.back();
  if (!requested.empty()) {
    const std::string v(requested);
    if (v == "avx2") want = CpuPath::Avx2;
    else if (v == "avx512") want = CpuPath::Avx512;
    else if (v == "amx") want = CpuPath::Amx;
    else return InvalidArgument("STRIDE_CPU=" + v + ": expected avx2, avx512 or amx");
    if (!runs(cpu_features(), want))
      return InvalidArgument("STRIDE_CPU=" + v + ": this CPU cannot run that path (best: " +
                             cpu_path_name(ok.back()) + ")");
  }
  g_path.store((int)want);
  return want;
}

CpuPath active_cpu_path() {
  const int p = g_path.load(std::memory_order_relaxed);
  if (p >= 0) return (CpuPath)p;
  auto r = resolve_cpu_path();
  return r.ok() ? *r : CpuPath::Avx2;
}

Status set_cpu_path(CpuPath p) {
  if (!runs(cpu_features(), p)) return InvalidArgument(std::string("this CPU cannot run the ") + cpu_path_name(p) + " path");
  std::lock_guard<std::mutex> lock(g_mu);
  g_path.store((int)p);
  return Status::Ok();
}

}  // namespace stride
