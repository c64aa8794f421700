// SipHash-2-4 against the reference implementation's test vectors
// (vectors.h of github.com/veorq/SipHash: key 00 01 .. 0f, message 00 01 ..
// n-1), including the paper's worked example (Appendix A, n = 15), and the
// random per-process key.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/siphash.h"

namespace stride {
namespace {

constexpr uint64_t kVectors[48] = {
    0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a, 0x85676696d7fb7e2d, 0xcf2794e0277187b7,
    0x18765564cd99a68d, 0xcbc9466e58fee3ce, 0xab0200f58b01d137, 0x93f5f5799a932462, 0x9e0082df0ba9e4b0,
    0x7a5dbbc594ddb9f3, 0xf4b32f46226bada7, 0x751e8fbc860ee5fb, 0x14ea5627c0843d90, 0xf723ca908e7af2ee,
    0xa129ca6149be45e5, 0x3f2acc7f57c29bdb, 0x699ae9f52cbe4794, 0x4bc1b3f0968dd39c, 0xbb6dc91da77961bd,
    0xbed65cf21aa2ee98, 0xd0f2cbb02e3b67c7, 0x93536795e3a33e88, 0xa80c038ccd5ccec8, 0xb8ad50c6f649af94,
    0xbce192de8a85b8ea, 0x17d835b85bbb15f3, 0x2f2e6163076bcfad, 0xde4daaaca71dc9a5, 0xa6a2506687956571,
    0xad87a3535c49ef28, 0x32d892fad841c342, 0x7127512f72f27cce, 0xa7f32346f95978e3, 0x12e0b01abb051238,
    0x15e034d40fa197ae, 0x314dffbe0815a3b4, 0x027990f029623981, 0xcadcd4e59ef40c4d, 0x9abfd8766a33735c,
    0x0e3ea96b5304a7d0, 0xad0c42d6fc585992, 0x187306c89bc215a9, 0xd4a60abcf3792b95, 0xf935451de4f21df2,
    0xa9538f0419755787, 0xdb9acddff56ca510, 0xd06c98cd5c0975eb,
};

TEST(SipHash, ReferenceVectors) {
  const SipKey key{0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
  uint8_t msg[48];
  for (int i = 0; i < 48; ++i) msg[i] = (uint8_t)i;
  for (int n = 0; n < 48; ++n) EXPECT_EQ(siphash24(key, msg, (size_t)n), kVectors[n]) << "length " << n;
  EXPECT_EQ(siphash24(key, msg, 15), 0xa129ca6149be45e5ull) << "the paper's Appendix A example";
}

TEST(SipHash, AllZeroKeyVector) {
  EXPECT_EQ(siphash24(SipKey{}, nullptr, 0), 0x1e924b9d737700d7ull);
}

TEST(SipHash, TheKeyChangesEveryOutput) {
  const uint8_t msg[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const SipKey a{1, 2}, b{1, 3};
  EXPECT_NE(siphash24(a, msg, 8), siphash24(b, msg, 8));
}

TEST(SipHash, RandomKeysDifferAndTheProcessKeyIsStable) {
  const SipKey a = random_sip_key(), b = random_sip_key();
  EXPECT_FALSE(a.k0 == b.k0 && a.k1 == b.k1);
  EXPECT_FALSE(a.k0 == 0 && a.k1 == 0);
  const SipKey& p = process_sip_key();
  EXPECT_EQ(&p, &process_sip_key());
  EXPECT_EQ(p.k0, process_sip_key().k0);
}

}  // namespace
}  // namespace stride
