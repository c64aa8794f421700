// Bad-file corpus: every malformed GGUF must give a non-ok Status that names
// the offending field, without crashing or allocating absurd amounts.
#include <gtest/gtest.h>

#include "gguf_test_util.h"
#include "loader/gguf_file.h"

namespace stride {
namespace {

using namespace stride::test;

// A small valid file exercising every scalar type, arrays and two tensors.
GGUFSpec small_spec() {
  GGUFSpec s;
  auto kv = [](const std::string& key, uint32_t type, auto value) {
    Bytes x;
    x.str(key).u32(type).put(value);
    return x.b;
  };
  Bytes f32arr, i32arr;
  f32arr.str("t.f32arr").u32(9).u32(6).u64(3).put(1.f).put(2.f).put(3.5f);
  i32arr.str("t.i32arr").u32(9).u32(5).u64(2).put<int32_t>(-1).put<int32_t>(7);
  s.kvs = {kv_str("general.architecture", "llama"), kv_u32("t.u32", 42), kv_i32("t.i32", -42),
           kv_f32("t.f32", 0.25f), kv_bool("t.bool", true), kv_str_arr("t.strs", {"a", "bc", ""}),
           kv("t.u8", 0, (uint8_t)200), kv("t.i8", 1, (int8_t)-5), kv("t.u16", 2, (uint16_t)60000),
           kv("t.i16", 3, (int16_t)-300), kv("t.u64", 10, (uint64_t)1 << 40),
           kv("t.i64", 11, -((int64_t)1 << 40)), kv("t.f64", 12, 2.5), f32arr.b, i32arr.b};
  s.tensors = {tensor("a", {64, 2}), tensor("b", {32, 3}, 8)};
  return s;
}

// Parses bytes written to a temp file.
Expected<std::unique_ptr<GGUFFile>> parse_bytes(const std::string& bytes) {
  TempDir dir;
  return GGUFFile::open(dir.write("x.gguf", bytes));
}

void expect_error(const std::string& bytes, StatusCode code, const std::string& needle) {
  auto f = parse_bytes(bytes);
  ASSERT_FALSE(f.ok()) << "expected failure mentioning: " << needle;
  EXPECT_EQ(f.status().code(), code) << f.status().to_string();
  EXPECT_NE(f.status().message().find(needle), std::string::npos)
      << "message '" << f.status().message() << "' lacks '" << needle << "'";
}

TEST(GGUFParse, SmallValidFileDecodesEveryType) {
  auto f = parse_bytes(build_gguf(small_spec()));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const GGUFFile& g = **f;
  EXPECT_EQ(g.get_int("t.u8").value(), 200);
  EXPECT_EQ(g.get_int("t.i8").value(), -5);
  EXPECT_EQ(g.get_int("t.u16").value(), 60000);
  EXPECT_EQ(g.get_int("t.i16").value(), -300);
  EXPECT_EQ(g.get_int("t.u32").value(), 42);
  EXPECT_EQ(g.get_int("t.i32").value(), -42);
  EXPECT_EQ(g.get_int("t.u64").value(), 1ll << 40);
  EXPECT_EQ(g.get_int("t.i64").value(), -(1ll << 40));
  EXPECT_DOUBLE_EQ(g.get_float("t.f32").value(), 0.25);
  EXPECT_DOUBLE_EQ(g.get_float("t.f64").value(), 2.5);
  EXPECT_DOUBLE_EQ(g.get_float("t.u32").value(), 42.0);  // any number converts
  EXPECT_TRUE(g.get_bool("t.bool").value());
  EXPECT_EQ(g.get_bool("t.u8").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.get_int("t.f32").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.get_string_array("t.strs").value(), (std::vector<std::string>{"a", "bc", ""}));
  EXPECT_EQ(g.get_float_array("t.f32arr").value(), (std::vector<float>{1.f, 2.f, 3.5f}));
  EXPECT_EQ(g.get_int_array("t.i32arr").value(), (std::vector<int64_t>{-1, 7}));
  EXPECT_EQ(g.get_int_array("t.strs").status().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(g.tensors().size(), 2u);
  const TensorView* b = g.find_tensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, DType::Q8_0);
  EXPECT_EQ(b->nbytes, 3 * 34);
  EXPECT_EQ(b->n_dims, 2);
  // Tensor a occupies [0, 512) of the data section; b starts at the next
  // 32-aligned offset, 512. The data section starts where the file's length
  // minus both tensors' span says.
  const TensorView* a = g.find_tensor("a");
  EXPECT_EQ(b->data - a->data, 512);
  const size_t data_start = g.file_size() - (512 + 3 * 34);
  EXPECT_EQ(data_start % 32, 0u);
  EXPECT_EQ((uint8_t)a->data[0], (uint8_t)(data_start * 7 + 3));
}

TEST(GGUFParse, EveryPrefixFails) {
  const std::string full = build_gguf(small_spec());
  TempDir dir;
  for (size_t n = 0; n < full.size(); ++n) {
    auto f = GGUFFile::open(dir.write("p.gguf", full.substr(0, n)));
    ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(f.status().code(), StatusCode::kCorrupt) << n << ": " << f.status().message();
  }
  EXPECT_TRUE(GGUFFile::open(dir.write("p.gguf", full)).ok());
}

TEST(GGUFParse, HeaderErrors) {
  std::string bad = build_gguf(small_spec());
  bad[0] = 'X';
  expect_error(bad, StatusCode::kCorrupt, "magic");
  GGUFSpec s = small_spec();
  s.version = 1;
  expect_error(build_gguf(s), StatusCode::kUnsupported, "version 1");
  s.version = 99;
  expect_error(build_gguf(s), StatusCode::kUnsupported, "version 99");
  s = small_spec();
  s.version = 2;
  EXPECT_TRUE(parse_bytes(build_gguf(s)).ok());
  s.tensor_count_override = 1ll << 60;
  expect_error(build_gguf(s), StatusCode::kCorrupt, "tensor_count 1152921504606846976");
  s = small_spec();
  s.kv_count_override = 1ll << 60;
  expect_error(build_gguf(s), StatusCode::kCorrupt, "kv_count");
  expect_error("", StatusCode::kCorrupt, "magic");
}

TEST(GGUFParse, MetadataErrors) {
  GGUFSpec s = small_spec();
  Bytes huge_str;
  huge_str.str("big").u32(8).u64(1ull << 60);
  s.kvs.push_back(huge_str.b);
  expect_error(build_gguf(s), StatusCode::kCorrupt, "metadata 'big' string length");

  s = small_spec();
  Bytes huge_key;
  huge_key.u64(1ull << 60);
  s.kvs.insert(s.kvs.begin(), huge_key.b);
  expect_error(build_gguf(s), StatusCode::kCorrupt, "metadata key #0 length");

  s = small_spec();
  Bytes arr;
  arr.str("arr").u32(9).u32(4).u64(1ull << 60);
  s.kvs.push_back(arr.b);
  expect_error(build_gguf(s), StatusCode::kCorrupt, "metadata 'arr' array_count");

  s = small_spec();
  Bytes str_arr;  // a count that fits by bytes, but an element string runs off
  str_arr.str("sa").u32(9).u32(8).u64(2).str("ok").u64(1ull << 62);
  s.kvs.push_back(str_arr.b);
  expect_error(build_gguf(s), StatusCode::kCorrupt, "metadata 'sa' element 1 length");

  s = small_spec();
  Bytes nested;
  nested.str("nest").u32(9).u32(9).u64(1);
  s.kvs.push_back(nested.b);
  expect_error(build_gguf(s), StatusCode::kUnsupported, "'nest' is a nested array");

  s = small_spec();
  Bytes badtype;
  badtype.str("weird").u32(13).u32(0);
  s.kvs.push_back(badtype.b);
  expect_error(build_gguf(s), StatusCode::kCorrupt, "'weird' has unknown value type 13");

  s = small_spec();
  s.kvs.push_back(kv_u32("t.u32", 1));
  expect_error(build_gguf(s), StatusCode::kCorrupt, "duplicate metadata 't.u32'");

  s = small_spec();
  s.kvs.push_back(kv_u32("general.alignment", 48));
  expect_error(build_gguf(s), StatusCode::kCorrupt, "general.alignment 48");
  s = small_spec();
  s.kvs.push_back(kv_u32("general.alignment", 0));
  expect_error(build_gguf(s), StatusCode::kCorrupt, "general.alignment 0");
  s = small_spec();
  s.kvs.push_back(kv_str("general.alignment", "x"));
  expect_error(build_gguf(s), StatusCode::kCorrupt, "general.alignment");
}

TEST(GGUFParse, CustomAlignmentIsHonoured) {
  GGUFSpec s = small_spec();
  s.alignment = 64;
  s.kvs.push_back(kv_u32("general.alignment", 64));
  auto f = parse_bytes(build_gguf(s));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f)->find_tensor("b")->data - (*f)->find_tensor("a")->data, 512);
  s.tensors[1].offset = 544;  // 32-aligned but not 64-aligned
  expect_error(build_gguf(s), StatusCode::kCorrupt, "tensor 'b' offset 544 is not aligned to 64");
}

TEST(GGUFParse, TensorErrors) {
  GGUFSpec s = small_spec();
  s.tensors[1].offset = 1 << 20;
  expect_error(build_gguf(s), StatusCode::kCorrupt,
               "tensor 'b': data [offset 1048576, size 102] extends past end of file");

  s = small_spec();
  s.tensors[1].offset = UINT64_MAX - 31;  // aligned, and offset + size wraps
  expect_error(build_gguf(s), StatusCode::kCorrupt, "tensor 'b': data [offset");

  s = small_spec();
  s.tensors[0].ne = {1ull << 32, 1ull << 32};
  expect_error(build_gguf(s), StatusCode::kCorrupt, "tensor 'a' element count overflows");

  s = small_spec();
  s.tensors[0].ne = {1ull << 61, 2};  // elements fit in int64, bytes (x4) do not
  expect_error(build_gguf(s), StatusCode::kCorrupt, "tensor 'a' byte size overflows");

  s = small_spec();
  s.tensors[0].ne = {64, 0};
  expect_error(build_gguf(s), StatusCode::kCorrupt, "tensor 'a' ne[1] = 0");

  s = small_spec();
  s.tensors[0].type = 4;  // removed Q4_2: not a known type
  expect_error(build_gguf(s), StatusCode::kUnsupported, "tensor 'a' has unknown type id 4");
  s.tensors[0].type = 1000;
  expect_error(build_gguf(s), StatusCode::kUnsupported, "unknown type id 1000");

  s = small_spec();
  s.tensors[0].ne = {2, 2, 2, 2, 2};
  expect_error(build_gguf(s), StatusCode::kCorrupt, "tensor 'a' has n_dims 5");

  s = small_spec();
  s.tensors[1].ne = {48, 3};  // Q8_0 rows must be multiples of 32
  expect_error(build_gguf(s), StatusCode::kCorrupt, "tensor 'b' ne[0] = 48");

  s = small_spec();
  s.tensors[1].offset = 520;
  expect_error(build_gguf(s), StatusCode::kCorrupt, "tensor 'b' offset 520 is not aligned to 32");

  s = small_spec();
  s.tensors[1].name = "a";
  expect_error(build_gguf(s), StatusCode::kCorrupt, "duplicate tensor 'a'");

  s = small_spec();
  s.tensors[0].name = std::string(1, 'x');
  s.tensor_count_override = 3;  // claims a third tensor that is not there
  auto f = parse_bytes(build_gguf(s));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace stride

namespace stride {
namespace {

// Random byte corruptions of the small file: any outcome but a crash is fine,
// and a file that parses must still have every tensor inside the file.
TEST(GGUFParse, RandomMutationsNeverCrash) {
  const std::string full = test::build_gguf(small_spec());
  test::TempDir dir;
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  auto next = [&] { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; };
  int failures = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string m = full;
    const int flips = 1 + (int)(next() % 4);
    for (int k = 0; k < flips; ++k) m[next() % m.size()] = (char)next();
    auto f = GGUFFile::open(dir.write("r.gguf", m));
    if (!f.ok()) {
      ++failures;
      EXPECT_FALSE(f.status().message().empty());
      continue;
    }
    for (const TensorView& t : (*f)->tensors()) {
      EXPECT_GE(t.nbytes, 0);
      EXPECT_LE((uint64_t)t.nbytes, (*f)->file_size());
    }
  }
  EXPECT_GT(failures, 0);  // the corpus really does exercise error paths
}

}  // namespace
}  // namespace stride
