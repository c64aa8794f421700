// `stride info`: the machine's kernel paths, and what a model file holds.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/rope_options.h"
#include "core/cpu_features.h"
#include "kernels/kernel_paths.h"
#include "loader/model_info.h"
#include "loader/model_source.h"
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

}  // namespace

void add_info_command(CLI::App& app, int& exit_code) {
  struct InfoArgs {
    std::string model;
    RopeOverride rope;
    bool json = false;
  };
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand("info", "Architecture, layers, window per layer, tensor types, size");
  cmd->add_option("--model,-m", args->model, "GGUF file or HF folder (without: only the CPU and kernel path)");
  cmd->add_flag("--json", args->json, "print JSON");
  add_rope_options(cmd, args->rope);
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
    if (args->json) {
      nlohmann::json j = describe_model_json(**src);
      j["cpu"] = cpu_json();
      j["build"] = build_json();
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s%s%s", describe_model(**src).c_str(), cpu_text().c_str(), build_text().c_str());
    }
    exit_code = 0;
  });
}

}  // namespace stride::cli
