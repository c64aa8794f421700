#pragma once
// SipHash-2-4 (Aumasson & Bernstein, "SipHash: a fast short-input PRF",
// 2012): a keyed 64-bit hash. Without the 128-bit key an attacker cannot
// compute outputs, so cannot choose inputs that collide; this is what makes
// hash-keyed caches safe against clients who pick the inputs (prompts).
#include <cstddef>
#include <cstdint>

namespace stride {

struct SipKey {
  uint64_t k0 = 0;  // key bytes 0..7, little-endian (the paper's convention)
  uint64_t k1 = 0;  // key bytes 8..15
};

// SipHash-2-4 of n bytes.
uint64_t siphash24(const SipKey& key, const void* data, size_t n);

// A fresh random key from the kernel (getrandom; std::random_device if that
// is unavailable).
SipKey random_sip_key();

// One random key per process, drawn on first use: hash values differ from
// run to run and are never shown to clients.
const SipKey& process_sip_key();

}  // namespace stride
