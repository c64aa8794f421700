// Float weights (F32, F16, BF16) repacked for the float matmul: 8 rows'
// 8-element groups side by side, so the tiles read one sequential stream
// per 8 rows instead of 8 streams a row apart (decode is bound by that
// stream; the values and their order of use are unchanged).
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/kernel_paths.h"
#include "kernels/packed_matrix.h"

namespace stride {

bool is_packable_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// [n_groups, n_in / 8, 8 rows, 8 elements] in the tensor's own element type.
Expected<PackedMatrix> pack_float_matrix(const TensorView& w, const RowsRead& rows_read) {
  if (!w.valid()) return InvalidArgument("repack: tensor '" + w.name + "' has no data");
  const int64_t n_in = w.ne[0], n_out = w.rows();
  if (n_in <= 0 || n_out <= 0 || n_in % kPackFloatElems != 0)
    return Unsupported("repack: tensor '" + w.name + "' rows of " + std::to_string(n_in) + " " +
                       dtype_name(w.type) + " elements are not whole groups of " +
                       std::to_string(kPackFloatElems));
  if (w.nbytes > 0 && w.nbytes < w.row_bytes() * n_out)
    return InvalidArgument("repack: tensor '" + w.name + "' is shorter than its shape");
  const int64_t esize = w.row_bytes() / n_in;
  const int64_t chunk = kPackFloatElems * esize;  // bytes of one row's 8-element group
  PackedMatrix pm;
  pm.type = w.type;
  pm.n_in = n_in;
  pm.n_out = n_out;
  pm.n_groups = (n_out + kPackRows - 1) / kPackRows;
  pm.group_bytes = kPackRows * w.row_bytes();
  pm.data.resize((size_t)(pm.n_groups * pm.group_bytes));
  constexpr int64_t kReportBytes = 4 << 20;
  int64_t reported_rows = 0;
  const int64_t n_chunks = n_in / kPackFloatElems;
  for (int64_t g = 0; g < pm.n_groups; ++g) {
    uint8_t* group = pm.data.data() + g * pm.group_bytes;
    for (int r = 0; r < kPackRows; ++r) {
      const int64_t row = g * kPackRows + r;
      uint8_t* lane = group + r * chunk;
      if (row >= n_out) {  // padding rows are zeros
        for (int64_t c = 0; c < n_chunks; ++c) std::memset(lane + c * kPackRows * chunk, 0, (size_t)chunk);
        continue;
      }
      const uint8_t* src = w.row(row);
      // A fixed-size copy per element size: inlined, where a run-time size calls memcpy.
      if (chunk == 16) {
        for (int64_t c = 0; c < n_chunks; ++c) std::memcpy(lane + c * kPackRows * 16, src + c * 16, 16);
      } else if (chunk == 32) {
        for (int64_t c = 0; c < n_chunks; ++c) std::memcpy(lane + c * kPackRows * 32, src + c * 32, 32);
      } else {
        for (int64_t c = 0; c < n_chunks; ++c) std::memcpy(lane + c * kPackRows * chunk, src + c * chunk, (size_t)chunk);
      }
    }
    const int64_t rows_done = std::min(n_out, (g + 1) * kPackRows);
    if (rows_read && ((rows_done - reported_rows) * w.row_bytes() >= kReportBytes || rows_done == n_out)) {
      rows_read(w.row(reported_rows), (rows_done - reported_rows) * w.row_bytes());
      reported_rows = rows_done;
    }
  }
  return pm;
}

}  // namespace stride
