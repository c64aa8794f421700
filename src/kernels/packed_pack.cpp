// Repacking GGUF blocks into the 8-row interleaved layout of packed_format.h.
// Runs once per weight at load time; scalar and simple on purpose, but with
// the type and layout as template parameters so that the compiler folds the
// per-type branches out of the per-element loops (load time is this loop).
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/packed_format.h"
#include "kernels/packed_matrix.h"
#include "kernels/quant_blocks.h"

namespace stride {
namespace {

using namespace quant;
using packed::Layout;

// One 32-element block of one row, unpacked: quants and header fields.
struct RowBlock {
  uint8_t q[32];       // unsigned quant (Q8_0: the int8 bits); not set for kPairsOnly types
  uint8_t pairs[16];   // kPairsOnly types: byte k = element k | element k + 16 << 4
  uint16_t d = 0, m = 0;        // fp16 scale (and min / dmin)
  uint8_t sc = 0, mn = 0;       // K-quant 6-bit scale and min of this block
  int8_t sc6[2] = {0, 0};       // Q6_K scales of elements 0-15 and 16-31
  uint8_t mn16[2] = {0, 0};     // Q2_K mins of elements 0-15 and 16-31 (scales in sc6)
  int8_t ls = 0;                // IQ4_XS scale of this block, minus 32
  uint8_t e = 0;                // MXFP4 exponent
};

// q[k] = low nibble of qs[k], q[k + 16] = its high nibble (k < 16): two plain
// loops, which the compiler vectorises (a per-element choice it does not).
inline void unpack_nibbles(const uint8_t* qs, uint8_t* q) {
  for (int k = 0; k < 16; ++k) q[k] = qs[k] & 0xF;
  for (int k = 0; k < 16; ++k) q[k + 16] = qs[k] >> 4;
}

// 4-bit types whose packed block is only the nibble-pair plane: extract fills
// RowBlock::pairs straight from the file's bytes (for most of them a copy of
// qs, which already pairs element k with k + 16) and leaves q alone.
template <DType T>
constexpr bool kPairsOnly = T == DType::Q4_0 || T == DType::Q4_1 || T == DType::IQ4_NL || T == DType::IQ4_XS ||
                            T == DType::MXFP4 || T == DType::Q4_K;

// Block b (32 elements) of a row in GGUF layout.
// Filled in place: the per-block struct copy was a large share of load time.
template <DType T>
[[gnu::always_inline]] inline void extract(const uint8_t* row, int64_t b, RowBlock& o) {
  uint32_t qh;
  switch (T) {
    case DType::Q4_0: {
      const BlockQ4_0& x = ((const BlockQ4_0*)row)[b];
      std::memcpy(o.pairs, x.qs, 16);
      o.d = x.d;
      break;
    }
    case DType::Q4_1: {
      const BlockQ4_1& x = ((const BlockQ4_1*)row)[b];
      std::memcpy(o.pairs, x.qs, 16);
      o.d = x.d;
      o.m = x.m;
      break;
    }
    case DType::Q5_0: {
      const BlockQ5_0& x = ((const BlockQ5_0*)row)[b];
      std::memcpy(&qh, x.qh, 4);
      unpack_nibbles(x.qs, o.q);
      for (int k = 0; k < 32; ++k) o.q[k] = (uint8_t)(o.q[k] | (((qh >> k) & 1) << 4));
      o.d = x.d;
      break;
    }
    case DType::Q5_1: {
      const BlockQ5_1& x = ((const BlockQ5_1*)row)[b];
      std::memcpy(&qh, x.qh, 4);
      unpack_nibbles(x.qs, o.q);
      for (int k = 0; k < 32; ++k) o.q[k] = (uint8_t)(o.q[k] | (((qh >> k) & 1) << 4));
      o.d = x.d;
      o.m = x.m;
      break;
    }
    case DType::Q8_0: {
      const BlockQ8_0& x = ((const BlockQ8_0*)row)[b];
      std::memcpy(o.q, x.qs, 32);
      o.d = x.d;
      break;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      // Sub-block s of a super-block: chunk s/2 of qs, low or high nibbles.
      const int64_t sb = b / 8;
      const int s = (int)(b % 8);
      const uint8_t* scales;
      const uint8_t* qs;
      const uint8_t* qh5 = nullptr;
      if constexpr (T == DType::Q4_K) {
        const BlockQ4_K& x = ((const BlockQ4_K*)row)[sb];
        o.d = x.d, o.m = x.dmin, scales = x.scales, qs = x.qs;
      } else {
        const BlockQ5_K& x = ((const BlockQ5_K*)row)[sb];
        o.d = x.d, o.m = x.dmin, scales = x.scales, qs = x.qs, qh5 = x.qh;
      }
      const uint8_t* chunk = qs + 32 * (s / 2);
      if constexpr (kPairsOnly<T>) {
        uint8_t lo[32];  // element l of the block (a local: no aliasing with the file's bytes)
        for (int l = 0; l < 32; ++l) lo[l] = (uint8_t)(s % 2 ? chunk[l] >> 4 : chunk[l] & 0xF);
        for (int k = 0; k < 16; ++k) o.pairs[k] = (uint8_t)(lo[k] | (lo[k + 16] << 4));
      } else {
        for (int l = 0; l < 32; ++l) {
          o.q[l] = (uint8_t)(s % 2 ? chunk[l] >> 4 : chunk[l] & 0xF);
          if (qh5) o.q[l] |= (uint8_t)(((qh5[l] >> s) & 1) << 4);
        }
      }
      k_scale_min(s, scales, &o.sc, &o.mn);
      break;
    }
    case DType::Q6_K: {
      // Sub-block s = element 32k + l of half s/4 (k = s % 4), as in dequantize.cpp.
      const BlockQ6_K& x = ((const BlockQ6_K*)row)[b / 8];
      const int s = (int)(b % 8), half = s / 4, k = s % 4;
      uint8_t q[32];  // a local: the compiler vectorises what cannot alias the file's bytes
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = (x.ql[64 * half + l + 32 * (k & 1)] >> (4 * (k >> 1))) & 0xF;
        const uint8_t hi = (x.qh[32 * half + l] >> (2 * k)) & 3;
        q[l] = (uint8_t)(lo | (hi << 4));
      }
      std::memcpy(o.q, q, 32);
      o.d = x.d;
      o.sc6[0] = x.scales[8 * half + 2 * k];
      o.sc6[1] = x.scales[8 * half + 2 * k + 1];
      break;
    }
    case DType::Q3_K: {
      // Sub-block s: bits 2k..2k+1 of half s / 4 (k = s % 4), high bit s of hmask.
      const BlockQ3_K& x = ((const BlockQ3_K*)row)[b / 8];
      const int s = (int)(b % 8);
      for (int l = 0; l < 32; ++l) {
        const int lo = (x.qs[32 * (s / 4) + l] >> (2 * (s % 4))) & 3;
        const int high = (x.hmask[l] >> s) & 1;
        o.q[l] = (uint8_t)(lo | (high << 2));  // q + 4: the value is d*sc*(o.q - 4)
      }
      o.d = x.d;
      o.sc6[0] = (int8_t)(q3_k_scale(x.scales, 2 * s) - 32);
      o.sc6[1] = (int8_t)(q3_k_scale(x.scales, 2 * s + 1) - 32);
      break;
    }
    case DType::IQ4_NL: {
      const BlockIQ4_NL& x = ((const BlockIQ4_NL*)row)[b];
      std::memcpy(o.pairs, x.qs, 16);  // the grid indices
      o.d = x.d;
      break;
    }
    case DType::Q2_K: {
      // Sub-block s: bits 2k..2k+1 of half s / 4 (k = s % 4); scale bytes 2s, 2s + 1.
      const BlockQ2_K& x = ((const BlockQ2_K*)row)[b / 8];
      const int s = (int)(b % 8);
      for (int l = 0; l < 32; ++l) o.q[l] = (uint8_t)((x.qs[32 * (s / 4) + l] >> (2 * (s % 4))) & 3);
      o.d = x.d;
      o.m = x.dmin;
      for (int h = 0; h < 2; ++h) {
        o.sc6[h] = (int8_t)(x.scales[2 * s + h] & 0xF);
        o.mn16[h] = (uint8_t)(x.scales[2 * s + h] >> 4);
      }
      break;
    }
    case DType::IQ4_XS: {  // q: the grid indices
      const BlockIQ4_XS& x = ((const BlockIQ4_XS*)row)[b / 8];
      const int s = (int)(b % 8);
      std::memcpy(o.pairs, x.qs + 16 * s, 16);
      o.d = x.d;
      o.ls = (int8_t)(iq4_xs_scale(x, s) - 32);
      break;
    }
    case DType::MXFP4: {
      const BlockMXFP4& x = ((const BlockMXFP4*)row)[b];
      std::memcpy(o.pairs, x.qs, 16);
      o.e = x.e;
      break;
    }
    default: break;
  }
}

// Writes block s of the record at `rec` from the 8 rows' unpacked blocks.
template <const Layout& L, bool kPairs>
[[gnu::always_inline]] inline void write_block(const RowBlock (&rb)[kPackRows], int s, uint8_t* rec) {
  uint8_t* sub = rec + L.header + s * L.sub;
  for (int r = 0; r < kPackRows; ++r) {
    const uint8_t* q = rb[r].q;
    if (L.is_signed && L.lut == packed::Lut::kNone) {
      for (int g = 0; g < 8; ++g) std::memcpy(sub + 32 * g + 4 * r, q + 4 * g, 4);
    } else if (L.p_off >= 0) {
      // Byte k of the plane: elements k and k + 16; stored as 4-byte pieces.
      uint8_t from_q[16];
      if constexpr (!kPairs)
        for (int k = 0; k < 16; ++k) from_q[k] = (uint8_t)((q[k] & 0xF) | ((q[k + 16] & 0xF) << 4));
      const uint8_t* pairs = kPairs ? rb[r].pairs : from_q;
      for (int j = 0; j < 4; ++j) std::memcpy(sub + L.p_off + 32 * j + 4 * r, pairs + 4 * j, 4);
    }
    if (L.q2_off >= 0)
      for (int g = 0; g < 8; ++g)
        for (int i = 0; i < 4; ++i)
          sub[L.q2_off + 32 * (g & 1) + 4 * r + i] |= (uint8_t)((q[4 * g + i] & 3) << (2 * (g >> 1)));
    if (L.min16) {
      sub[16 + 2 * r] = rb[r].mn16[0];
      sub[16 + 2 * r + 1] = rb[r].mn16[1];
    }
    const int hbit = L.q2_off >= 0 ? 2 : 4;  // the bit above the low plane's bits
    if (L.h_off >= 0)
      for (int i = 0; i < 4; ++i) {
        uint8_t bits = 0;
        for (int g = 0; g < 8; ++g) bits |= (uint8_t)(((q[4 * g + i] >> hbit) & 1) << g);
        sub[L.h_off + 4 * r + i] = bits;
      }
    if (L.h2_off >= 0) {
      // Bytes 4r..4r+3 of each half of the plane are this row's alone.
      uint8_t h2[2][4] = {};
      for (int g = 0; g < 8; ++g)
        for (int i = 0; i < 4; ++i) h2[g >> 2][i] |= (uint8_t)(((q[4 * g + i] >> 4) & 3) << (2 * (g & 3)));
      for (int half = 0; half < 2; ++half) std::memcpy(sub + L.h2_off + 32 * half + 4 * r, h2[half], 4);
    }
    if (L.q6) {
      sub[2 * r] = (uint8_t)rb[r].sc6[0];
      sub[2 * r + 1] = (uint8_t)rb[r].sc6[1];
    }
    // Header fields; K-quant d/dmin are per super-block (identical for every s).
    if (L.lut == packed::Lut::kMxfp4) {
      rec[r] = rb[r].e;
      continue;
    }
    std::memcpy(rec + 2 * r, &rb[r].d, 2);
    if (L.lut == packed::Lut::kIq4 && L.blocks > 1) rec[16 + 8 * s + r] = (uint8_t)rb[r].ls;
    if (L.offset == packed::Offset::kMin || L.offset == packed::Offset::kKQuant || L.min16)
      std::memcpy(rec + 16 + 2 * r, &rb[r].m, 2);
    if (L.offset == packed::Offset::kKQuant) {
      rec[32 + 8 * s + r] = rb[r].sc;
      rec[96 + 8 * s + r] = rb[r].mn;
    }
  }
}

// Groups [g0, g1) of w into pm (sized, not yet written).
template <DType T, const Layout& L>
void pack_groups(const TensorView& w, PackedMatrix& pm, int64_t g0, int64_t g1) {
  const int64_t n_out = pm.n_out, n_blocks = pm.n_in / 32;
  RowBlock rb[kPackRows] = {};  // extract sets the same fields of every block of a type
  const int64_t row_bytes = w.row_bytes();
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* group = pm.data.data() + g * pm.group_bytes;
    std::memset(group, 0, (size_t)pm.group_bytes);  // padding rows stay zero
    const uint8_t* first_row = w.data + g * kPackRows * row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) {
      for (int r = 0; r < kPackRows; ++r) {
        if (g * kPackRows + r < n_out) {
          extract<T>(first_row + r * row_bytes, b, rb[r]);
        } else {
          rb[r] = RowBlock{};  // zero quants and scales
          std::memset(rb[r].q, 0, sizeof rb[r].q);
          std::memset(rb[r].pairs, 0, sizeof rb[r].pairs);
        }
      }
      write_block<L, kPairsOnly<T>>(rb, (int)(b % L.blocks), group + (b / L.blocks) * L.record());
    }
  }
}

// Each packable quantized type: its layout and its packer of row groups.
struct TypePacker {
  DType type;
  const Layout* layout;
  void (*pack)(const TensorView& w, PackedMatrix& pm, int64_t g0, int64_t g1);
};
template <DType T, const Layout& L>
constexpr TypePacker packer_entry() {
  return {T, &L, &pack_groups<T, L>};
}
constexpr TypePacker kPackers[] = {
    packer_entry<DType::Q4_0, packed::kQ4_0>(),   packer_entry<DType::Q4_1, packed::kQ4_1>(),
    packer_entry<DType::Q5_0, packed::kQ5_0>(),   packer_entry<DType::Q5_1, packed::kQ5_1>(),
    packer_entry<DType::Q8_0, packed::kQ8_0>(),   packer_entry<DType::Q4_K, packed::kQ4_K>(),
    packer_entry<DType::Q5_K, packed::kQ5_K>(),   packer_entry<DType::Q6_K, packed::kQ6_K>(),
    packer_entry<DType::Q2_K, packed::kQ2_K>(),   packer_entry<DType::Q3_K, packed::kQ3_K>(),
    packer_entry<DType::IQ4_NL, packed::kIQ4_NL>(), packer_entry<DType::IQ4_XS, packed::kIQ4_XS>(),
    packer_entry<DType::MXFP4, packed::kMXFP4>(),
};

const TypePacker* packer_of(DType t) {
  for (const TypePacker& p : kPackers)
    if (p.type == t) return &p;
  return nullptr;
}

}  // namespace

bool packable(DType t) { return packer_of(t) != nullptr || is_packable_float(t); }

bool packable(const TensorView& w) {
  return packable(w.type) && (!is_packable_float(w.type) || w.ne[0] % kPackFloatElems == 0);
}

Expected<PackedMatrix> pack_float_matrix(const TensorView& w, const RowsRead& rows_read);  // packed_float.cpp

Expected<PackedMatrix> pack_matrix(const TensorView& w, const RowsRead& rows_read) {
  if (is_packable_float(w.type)) return pack_float_matrix(w, rows_read);
  const TypePacker* packer = packer_of(w.type);
  if (!packer) return Unsupported(std::string("cannot repack weight type ") + dtype_name(w.type));
  if (!w.valid()) return InvalidArgument("repack: tensor '" + w.name + "' has no data");
  const int64_t n_in = w.ne[0], n_out = w.rows();
  const int64_t elems_per_record = 32 * (int64_t)packer->layout->blocks;
  if (n_in <= 0 || n_out <= 0 || n_in % elems_per_record != 0 || w.row_bytes() < 0)
    return InvalidArgument("repack: tensor '" + w.name + "' rows of " + std::to_string(n_in) +
                           " elements are not whole " + dtype_name(w.type) + " blocks");
  if (w.nbytes > 0 && w.nbytes < w.row_bytes() * n_out)
    return InvalidArgument("repack: tensor '" + w.name + "' is shorter than its shape");
  PackedMatrix pm;
  pm.type = w.type;
  pm.n_in = n_in;
  pm.n_out = n_out;
  pm.n_groups = (n_out + kPackRows - 1) / kPackRows;
  const int64_t n_records = n_in / elems_per_record;
  pm.group_bytes = n_records * packer->layout->record();
  pm.data.resize((size_t)(pm.n_groups * pm.group_bytes));  // each group zeroed when written
  constexpr int64_t kReportBytes = 4 << 20;
  const int64_t groups_per_report = std::max<int64_t>(1, kReportBytes / std::max<int64_t>(1, kPackRows * w.row_bytes()));
  for (int64_t g0 = 0; g0 < pm.n_groups; g0 += groups_per_report) {
    const int64_t g1 = std::min(pm.n_groups, g0 + groups_per_report);
    packer->pack(w, pm, g0, g1);
    if (rows_read) {
      const int64_t r0 = g0 * kPackRows, r1 = std::min(n_out, g1 * kPackRows);
      rows_read(static_cast<const uint8_t*>(w.row(r0)), (r1 - r0) * w.row_bytes());
    }
  }
  return pm;
}

}  // namespace stride
