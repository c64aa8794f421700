#include "core/siphash.h"

#include <sys/random.h>

#include <cstring>
#include <random>

namespace stride {

namespace {

inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

struct State {
  uint64_t v0, v1, v2, v3;
  void round() {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  }
  void absorb(uint64_t m) {  // c = 2 compression rounds
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
};

}  // namespace

uint64_t siphash24(const SipKey& key, const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  State s{key.k0 ^ 0x736f6d6570736575ull, key.k1 ^ 0x646f72616e646f6dull, key.k0 ^ 0x6c7967656e657261ull,
          key.k1 ^ 0x7465646279746573ull};
  const size_t whole = n & ~size_t(7);
  for (size_t i = 0; i < whole; i += 8) s.absorb(load_le64(p + i));
  // The last block: the remaining bytes and the length mod 256 in the top byte.
  uint64_t last = uint64_t(n & 0xff) << 56;
  for (size_t i = 0; i < (n & 7); ++i) last |= uint64_t(p[whole + i]) << (8 * i);
  s.absorb(last);
  s.v2 ^= 0xff;  // d = 4 finalization rounds
  for (int i = 0; i < 4; ++i) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

SipKey random_sip_key() {
  uint8_t raw[16];
  size_t got = 0;
  while (got < sizeof raw) {
    const ssize_t r = ::getrandom(raw + got, sizeof raw - got, 0);
    if (r <= 0) break;  // ENOSYS or similar: fall back below
    got += (size_t)r;
  }
  if (got < sizeof raw) {
    std::random_device rd;
    for (size_t i = 0; i < sizeof raw; i += 4) {
      const uint32_t w = rd();
      std::memcpy(raw + i, &w, 4);
    }
  }
  return SipKey{load_le64(raw), load_le64(raw + 8)};
}

const SipKey& process_sip_key() {
  static const SipKey key = random_sip_key();
  return key;
}

}  // namespace stride
