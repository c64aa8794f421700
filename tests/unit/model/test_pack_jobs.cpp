// Load-time repacking on several threads: the same bytes as one matrix at a
// time, every job run, and a failing job reported without stopping the rest.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "../kernels/random_weight.h"
#include "core/thread_pool.h"
#include "model/pack_jobs.h"

namespace stride {
namespace {

struct Weights {
  std::vector<std::unique_ptr<RandomWeight>> w;
  Weights() {
    const DType types[] = {DType::Q4_K, DType::Q6_K, DType::Q8_0, DType::Q4_0, DType::Q5_K, DType::IQ4_XS};
    uint32_t seed = 1;
    for (int rep = 0; rep < 3; ++rep)
      for (DType t : types) {
        const int64_t n_in = (t == DType::Q8_0 || t == DType::Q4_0) ? 96 : 512;
        w.push_back(std::make_unique<RandomWeight>(t, n_in, 3 + 11 * rep + (int64_t)t % 7, seed++));
      }
  }
};

bool same(const PackedMatrix& a, const PackedMatrix& b) {
  return a.type == b.type && a.n_in == b.n_in && a.n_out == b.n_out && a.group_bytes == b.group_bytes &&
         a.data.size() == b.data.size() && std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0;
}

TEST(PackJobs, ThreadsGiveTheBytesOfOneMatrixAtATime) {
  Weights ws;
  const size_t n = ws.w.size();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(threads);
    ThreadPool pool(threads);
    std::vector<std::unique_ptr<PackedMatrix>> out(n);
    std::vector<PackJob> jobs;
    for (size_t i = 0; i < n; ++i) jobs.push_back({&ws.w[i]->view, &out[i]});
    ASSERT_TRUE(run_pack_jobs(jobs, nullptr, &pool).ok());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(out[i]) << i;
      Expected<PackedMatrix> alone = pack_matrix(ws.w[i]->view);
      ASSERT_TRUE(alone.ok());
      EXPECT_TRUE(same(*out[i], *alone)) << "matrix " << i;
    }
  }
}

TEST(PackJobs, AFailingJobIsReportedAndTheOthersRun) {
  Weights ws;
  TensorView short_view = ws.w[0]->view;
  short_view.nbytes = 100;  // fewer bytes than its shape needs
  TensorView float_odd = ws.w[1]->view;
  float_odd.type = DType::F32;
  float_odd.ne = {12, 4, 1, 1};  // not whole 8-element groups: stays in the file layout
  std::vector<std::unique_ptr<PackedMatrix>> out(4);
  std::vector<PackJob> jobs = {{&ws.w[2]->view, &out[0]}, {&short_view, &out[1]}, {&float_odd, &out[2]},
                               {&ws.w[3]->view, &out[3]}};
  ThreadPool pool(2);
  const Status s = run_pack_jobs(jobs, nullptr, &pool);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("shorter than its shape"), std::string::npos) << s.message();
  EXPECT_TRUE(out[0] && out[3]);
  EXPECT_FALSE(out[1]);
  EXPECT_FALSE(out[2]);
}

}  // namespace
}  // namespace stride
