#pragma once
// What this CPU (and the OS) lets the kernels use, and which kernel path
// runs. One portable build carries an AVX2 path, an AVX-512 (VNNI) path and
// an AMX path (AVX-512 with int8 tile matmuls for prefill), and picks the
// best the machine allows at start; a requested path (the command line's
// STRIDE_CPU=avx2|avx512|amx) forces a lower one, so one machine can test
// every path it can run.
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stride {

struct CpuFeatures {
  std::string vendor, brand;
  bool avx2 = false, fma = false, f16c = false;
  bool os_ymm = false;  // the OS saves ymm state (XCR0)
  bool avx512f = false, avx512vl = false, avx512bw = false, avx512dq = false, avx512vnni = false;
  bool avx512bf16 = false;  // vdpbf16ps: the AVX-512 path's bf16-weight matmul uses it when present
  bool os_zmm = false;  // the OS saves zmm and opmask state
  bool avx_vnni = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
  bool os_amx = false;  // XCR0 has tile state and Linux granted this process tile data
};

// cpuid and xgetbv, read once.
const CpuFeatures& cpu_features();

// Kernel paths, lowest first.
// Each path runs everything the one below it does (Amx is Avx512 plus tile
// matmuls), so `path >= CpuPath::Avx512` asks for AVX-512 code.
enum class CpuPath { Avx2 = 0, Avx512 = 1, Amx = 2 };
const char* cpu_path_name(CpuPath p);
// Every path this machine can run, lowest first (empty: not even AVX2).
std::vector<CpuPath> supported_cpu_paths();

// The path the kernels take: the best supported, or `requested` ("avx2",
// "avx512" or "amx"; empty: the best). Errors: a CPU without AVX2/FMA/F16C,
// an unknown name, or a path the CPU cannot run; messages name the request
// as STRIDE_CPU, the variable the command line reads it from. Resolved on
// the first call; main() calls it first to fail clearly.
Expected<CpuPath> resolve_cpu_path(std::string_view requested = {});
// The resolved path (AVX2 if resolution failed: main() has refused to start then).
CpuPath active_cpu_path();
// Drops the AMX path from the supported ones (and leaves it for AVX-512 if
// it runs): called when its start-up check disagrees with the AVX-512 path.
void disable_amx_path();
// For tests: run the kernels on p (which must be supported).
Status set_cpu_path(CpuPath p);

}  // namespace stride
