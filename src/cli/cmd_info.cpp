// `stride info`: the machine's kernel paths, and what a model file holds.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/head_type_option.h"
#include "cli/rope_options.h"
#include "core/cpu_features.h"
#include "kernels/kernel_paths.h"
#include "loader/model_info.h"
#include "kernels/dequantize.h"
#include "loader/model_source.h"
#include "model/head_type.h"
#include "redis/redis_tier.h"

namespace stride::cli {

namespace {

nlohmann::json cpu_json() {
  const CpuFeatures& f = cpu_features();
  nlohmann::json j;
  j["brand"] = f.brand;
  j["vendor"] = f.vendor;
  j["path"] = cpu_path_name(active_cpu_path());
  nlohmann::json paths = nlohmann::json::array();
  for (const CpuPath p : supported_cpu_paths()) paths.push_back(cpu_path_name(p));
  j["supported_paths"] = paths;
  // The float-weight matmul: AMX-BF16 tile dots on the amx path where the CPU has them.
  j["float_matmul"] = kernels::kernel_table(active_cpu_path()).x_tiles ? "amx_bf16" : "fma";
  j["features"] = {{"avx2", f.avx2},         {"fma", f.fma},           {"f16c", f.f16c},
                   {"avx512f", f.avx512f},   {"avx512vl", f.avx512vl}, {"avx512bw", f.avx512bw},
                   {"avx512vnni", f.avx512vnni}, {"avx_vnni", f.avx_vnni}, {"amx_tile", f.amx_tile},
                   {"amx_int8", f.amx_int8}, {"amx_bf16", f.amx_bf16}, {"os_zmm", f.os_zmm},
                   {"os_amx", f.os_amx}};
  return j;
}

std::string cpu_text() {
  const nlohmann::json j = cpu_json();
  std::string paths;
  for (const auto& p : j["supported_paths"]) paths += (paths.empty() ? "" : ", ") + p.get<std::string>();
  return "cpu: " + j["brand"].get<std::string>() + "\nkernel path: " + j["path"].get<std::string>() +
         " (supported: " + paths + "; STRIDE_CPU=avx2|avx512|amx forces one)\nfloat matmul: " +
         j["float_matmul"].get<std::string>() + "\n";
}

// What this build can serve beyond the core: the shared KV tier needs hiredis.
nlohmann::json build_json() { return {{"kv_shared_tier", redis_tier_built() ? "redis" : "not built"}}; }

std::string build_text() {
  return std::string("kv shared tier: ") +
         (redis_tier_built() ? "redis (kv_shared_tier: redis://host:port)\n" : "not built (no hiredis)\n");
}

// The first n rows of the head as it runs in `type`: their bytes (hex) and
// their values as the reference dequantizer reads them.
nlohmann::json head_rows_json(const TensorView& head, DType type, int64_t n) {
  nlohmann::json rows = nlohmann::json::array();
  const int64_t cols = head.cols(), row_bytes = dtype_row_bytes(type, cols);
  std::vector<float> x((size_t)cols), y((size_t)cols);
  std::vector<uint8_t> q((size_t)row_bytes);
  static const char* kHex = "0123456789abcdef";
  for (int64_t r = 0; r < std::min(n, head.rows()); ++r) {
    if (type == head.type) {
      std::copy(head.row(r), head.row(r) + row_bytes, q.begin());
    } else {
      dequantize_tensor_row(head, r, x.data());
      quantize_head_row(type, x.data(), q.data(), cols);
    }
    dequantize_row(type, q.data(), y.data(), cols);
    std::string hex;
    for (uint8_t b : q) hex += {kHex[b >> 4], kHex[b & 15]};
    rows.push_back({{"row", r}, {"bytes_hex", hex}, {"values", y}});
  }
  return rows;
}

// The output head as loading with --head-type `asked` would run it: the
// tensor it comes from, the file's type and the type in effect (and its
// first n_rows rows).
Expected<nlohmann::json> head_json(const ModelSource& src, HeadType asked, int64_t n_rows) {
  const TensorView* t = src.tensor("output.weight");
  const bool tied = t == nullptr;
  if (tied) t = src.tensor("token_embd.weight");
  if (!t) return NotFound("model has neither output.weight nor token_embd.weight");
  STRIDE_ASSIGN_OR_RETURN(const DType type, head_type_in_effect(t->type, t->cols(), asked));
  nlohmann::json j{{"tensor", tied ? "token_embd.weight" : "output.weight"},
                    {"tied", tied},
                    {"file_type", dtype_name(t->type)},
                    {"type", dtype_name(type)},
                    {"requantized", type != t->type}};
  if (n_rows > 0) j["rows"] = head_rows_json(*t, type, n_rows);
  return j;
}

std::string head_text(const nlohmann::json& h) {
  std::string s = "output head:     " + h["type"].get<std::string>();
  if (h["requantized"].get<bool>()) s += " (requantized at load from " + h["file_type"].get<std::string>() + ")";
  else s += " (as stored)";
  return s + ", " + h["tensor"].get<std::string>() + "\n";
}

}  // namespace

void add_info_command(CLI::App& app, int& exit_code) {
  struct InfoArgs {
    std::string model;
    RopeOverride rope;
    std::string head_type = "file";
    int64_t head_rows = 0;
    bool json = false;
  };
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand("info", "Architecture, layers, window per layer, tensor types, size");
  cmd->add_option("--model,-m", args->model, "GGUF file or HF folder (without: only the CPU and kernel path)");
  cmd->add_flag("--json", args->json, "print JSON");
  add_rope_options(cmd, args->rope);
  add_head_type_option(cmd, args->head_type);
  cmd->add_option("--head-rows", args->head_rows,
                  "with --json: the first N rows of the head as it runs (bytes and values)");
  cmd->callback([args, &exit_code] {
    if (args->model.empty()) {
      if (args->json) std::printf("%s\n", nlohmann::json{{"cpu", cpu_json()}, {"build", build_json()}}.dump(2).c_str());
      else std::printf("%s%s", cpu_text().c_str(), build_text().c_str());
      exit_code = 0;
      return;
    }
    auto src = open_model(args->model, args->rope);
    if (!src) {
      exit_code = fail(src.status());
      return;
    }
    auto head = head_json(**src, parse_head_type(args->head_type).value_or(HeadType::File),
                          args->json ? args->head_rows : 0);
    if (!head) {
      exit_code = fail(head.status());
      return;
    }
    if (args->json) {
      nlohmann::json j = describe_model_json(**src);
      j["output_head"] = *head;
      j["cpu"] = cpu_json();
      j["build"] = build_json();
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s%s%s%s", describe_model(**src).c_str(), head_text(*head).c_str(), cpu_text().c_str(),
                  build_text().c_str());
    }
    exit_code = 0;
  });
}

}  // namespace stride::cli
