# Shared by scripts/fuzz_regress and scripts/fuzz_long (sourced, not run).
# Configures and builds the libFuzzer targets (fuzz/CMakeLists.txt) with clang
# in their own build directory; a warm build only checks timestamps.
#   STRIDE_FUZZ_BUILD_DIR (default build-fuzz), STRIDE_JOBS (default 2),
#   STRIDE_FUZZ_VOCAB_DIR (default ../shared/fixtures/vocab beside the repo).

FUZZ_TARGETS=(gguf safetensors hf_config tokenizer_spm tokenizer_bpe openai_request chat_template jinja http grammar embeddings tool_reply)

fuzz_setup_env() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  FUZZ_BUILD="${STRIDE_FUZZ_BUILD_DIR:-build-fuzz}"
  [[ "$FUZZ_BUILD" = /* ]] || FUZZ_BUILD="$ROOT/$FUZZ_BUILD"
  JOBS="${STRIDE_JOBS:-2}"
  export STRIDE_FUZZ_VOCAB_DIR="${STRIDE_FUZZ_VOCAB_DIR:-$ROOT/../shared/fixtures/vocab}"
  # LeakSanitizer needs ptrace-free stop-the-world; keep it on, but report
  # UBSan with stacks so a crash file says where.
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
}

fuzz_build() {
  local cxx cc
  cxx="$(command -v clang++ || command -v clang++-14 || true)"
  cc="$(command -v clang || command -v clang-14 || true)"
  if [[ -z "$cxx" || -z "$cc" ]]; then
    echo "[fuzz] clang is not installed (apt-get install clang-14 libclang-rt-14-dev)" >&2
    return 1
  fi
  if [[ ! -f "$FUZZ_BUILD/CMakeCache.txt" ]]; then
    cmake -S "$ROOT" -B "$FUZZ_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
      -DSTRIDE_FUZZ=ON -DSTRIDE_TESTS=OFF >/dev/null || return 1
  fi
  cmake --build "$FUZZ_BUILD" --target stride_fuzzers -j"$JOBS" >"$FUZZ_BUILD/fuzz_build.log" 2>&1 || {
    tail -40 "$FUZZ_BUILD/fuzz_build.log" >&2
    return 1
  }
}

fuzz_bin() { echo "$FUZZ_BUILD/fuzz/fuzz_$1"; }

# -dict=... when the target has a dictionary (fuzz/dicts/<t>.dict), else nothing.
fuzz_dict() { [[ -f "$ROOT/fuzz/dicts/$1.dict" ]] && echo "-dict=$ROOT/fuzz/dicts/$1.dict"; }
