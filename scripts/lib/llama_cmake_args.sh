# llama.cpp CMake flags for this CPU, shared by scripts/setup (the llama-cpp-python
# oracle build) and scripts/build_llama_bench, so that both build llama.cpp alike.
#
#   source scripts/lib/llama_cmake_args.sh; args="$(llama_cmake_args [CPUINFO])"
#
# CPUINFO (default /proc/cpuinfo) is the file read for the CPU's flags.
#
# llama.cpp's AMX kernels crash (ggml_backend_amx_mul_mat) on CPUs whose
# /proc/cpuinfo lists amx_tile, and -march=native there enables them: on those
# CPUs this prints a non-native set (AVX2/AVX-512/VNNI as the CPU has them, AMX
# off). Elsewhere it prints nothing: llama.cpp's own native build is fine.
llama_cmake_args() {
  local info="${1:-/proc/cpuinfo}"
  grep -qw amx_tile "$info" 2>/dev/null || return 0
  local args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  _llama_cpu_has() { grep -qw "$1" "$info"; }
  _llama_cpu_has avx512f && args+=" -DGGML_AVX512=ON"
  _llama_cpu_has avx512_vnni && args+=" -DGGML_AVX512_VNNI=ON"
  _llama_cpu_has avx512vbmi && args+=" -DGGML_AVX512_VBMI=ON"
  _llama_cpu_has avx512_bf16 && args+=" -DGGML_AVX512_BF16=ON"
  _llama_cpu_has avx_vnni && args+=" -DGGML_AVX_VNNI=ON"
  args+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  printf '%s\n' "$args"
}
