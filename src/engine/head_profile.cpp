#include "engine/head_profile.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "attention/head_budget.h"
#include "core/sha256.h"

namespace stride {

namespace {

constexpr const char* kFormat = "stride-head-profile";
constexpr int kVersion = 1;

nlohmann::json identity_json(const ModelIdentity& m) {
  return {{"name", m.name},       {"architecture", m.architecture}, {"n_layer", m.n_layer},
          {"n_head", m.n_head},   {"n_kv_heads", m.n_kv_heads},     {"head_dim", m.head_dim},
          {"tensors", m.tensors}, {"tensor_digest", m.tensor_digest}};
}

ModelIdentity identity_of(const nlohmann::json& j) {
  ModelIdentity m;
  m.name = j.at("name").get<std::string>();
  m.architecture = j.at("architecture").get<std::string>();
  m.n_layer = j.at("n_layer").get<int>();
  m.n_head = j.at("n_head").get<int>();
  m.n_kv_heads = j.at("n_kv_heads").get<int>();
  m.head_dim = j.at("head_dim").get<int>();
  m.tensors = j.at("tensors").get<int64_t>();
  m.tensor_digest = j.at("tensor_digest").get<std::string>();
  return m;
}

}  // namespace

ModelIdentity model_identity(const ModelSource& source) {
  ModelIdentity m;
  const std::string file_name = std::filesystem::path(source.path).filename().string();
  m.name = source.gguf() ? source.gguf()->get_string_or("general.name", file_name) : file_name;
  m.architecture = arch_name(source.config.arch);
  m.n_layer = source.config.n_layer;
  m.n_head = source.config.n_head;
  m.n_kv_heads = source.config.n_head_kv;
  m.head_dim = source.config.head_dim;
  // The file's tensors as stored (loading may repack or rename them), by name.
  std::map<std::string, const TensorView*> stored;
  if (source.gguf()) {
    for (const TensorView& t : source.gguf()->tensors()) stored[t.name] = &t;
  } else {
    for (const auto& [name, t] : source.tensors()) stored[name] = &t;
  }
  std::string shapes;  // "name type ne0 ne1 ne2 ne3\n" per tensor
  for (const auto& [name, t] : stored) {
    shapes += name + " " + std::to_string((int)t->type);
    for (const int64_t n : t->ne) shapes += " " + std::to_string(n);
    shapes += "\n";
  }
  m.tensors = (int64_t)stored.size();
  m.tensor_digest = sha256_hex(sha256_bytes(shapes.data(), shapes.size()));
  return m;
}

Status write_head_profile(const HeadProfile& p, const std::string& path) {
  nlohmann::json mass = nlohmann::json::array();
  for (int l = 0; l < p.n_layer; ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (int h = 0; h < p.n_kv_heads; ++h) row.push_back(p.distant_mass[(size_t)l * p.n_kv_heads + h]);
    mass.push_back(row);
  }
  const CalibrationSetup& s = p.setup;
  const nlohmann::json j = {
      {"format", kFormat},
      {"version", kVersion},
      {"model", identity_json(p.model)},
      {"calibration",
       {{"lengths", s.lengths}, {"tasks", s.tasks}, {"prompts", s.prompts}, {"decode_steps", s.decode_steps},
        {"seed", s.seed}, {"page_size", s.page_size}, {"sinks", s.sinks}, {"window", s.window}}},
      {"distant_mass", mass}};
  std::ofstream f(path);
  if (!f) return InvalidArgument("cannot write the head profile " + path);
  f << j.dump(1) << "\n";
  if (!f) return Internal("writing the head profile " + path + " failed");
  return Status::Ok();
}

Expected<HeadProfile> read_head_profile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound("cannot read the head profile " + path + " (make one with `stride calibrate-heads`)");
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kFormat)
    return InvalidArgument(path + " is not a head profile (format \"" + kFormat + "\")");
  if (j.value("version", 0) != kVersion)
    return InvalidArgument(path + ": head profile version " + std::to_string(j.value("version", 0)) +
                           ", this build reads version " + std::to_string(kVersion));
  HeadProfile p;
  try {
    p.model = identity_of(j.at("model"));
    const nlohmann::json& c = j.at("calibration");
    p.setup.lengths = c.at("lengths").get<std::vector<int64_t>>();
    p.setup.tasks = c.at("tasks").get<std::vector<std::string>>();
    p.setup.prompts = c.at("prompts").get<int>();
    p.setup.decode_steps = c.at("decode_steps").get<int>();
    p.setup.seed = c.at("seed").get<uint64_t>();
    p.setup.page_size = c.at("page_size").get<int>();
    p.setup.sinks = c.at("sinks").get<int64_t>();
    p.setup.window = c.at("window").get<int64_t>();
    const nlohmann::json& mass = j.at("distant_mass");
    p.n_layer = (int)mass.size();
    p.n_kv_heads = mass.empty() ? 0 : (int)mass.at(0).size();
    for (const nlohmann::json& row : mass) {
      if ((int)row.size() != p.n_kv_heads) return InvalidArgument(path + ": distant_mass rows differ in length");
      for (const nlohmann::json& v : row) p.distant_mass.push_back(v.get<double>());
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(path + ": malformed head profile: " + e.what());
  }
  if (p.n_layer != p.model.n_layer || p.n_kv_heads != p.model.n_kv_heads)
    return InvalidArgument(path + ": distant_mass is " + std::to_string(p.n_layer) + " x " +
                           std::to_string(p.n_kv_heads) + " but the profile's model has " +
                           std::to_string(p.model.n_layer) + " layers x " + std::to_string(p.model.n_kv_heads) +
                           " kv heads");
  return p;
}

Status check_profile_model(const HeadProfile& profile, const ModelIdentity& model) {
  if (profile.model == model) return Status::Ok();
  const ModelIdentity& a = profile.model;
  std::string what;
  if (a.name != model.name) what = "name '" + a.name + "', this model is '" + model.name + "'";
  else if (a.architecture != model.architecture) what = "architecture " + a.architecture + ", this model's is " + model.architecture;
  else if (a.n_layer != model.n_layer || a.n_kv_heads != model.n_kv_heads || a.n_head != model.n_head ||
           a.head_dim != model.head_dim)
    what = "a different shape (layers, heads, kv heads or head size)";
  else
    what = "different tensors (names, types or shapes: another quantization or variant)";
  return InvalidArgument("the head profile was measured on another model: " + what +
                         "; run `stride calibrate-heads` on this model");
}

Status apply_head_profiles(std::vector<PolicySpec>& layer_policies, const ModelIdentity& model) {
  // Layers naming the same file and retrieval share one pool of picks.
  std::map<std::pair<std::string, double>, std::vector<int>> groups;
  for (int l = 0; l < (int)layer_policies.size(); ++l) {
    const PolicySpec& p = layer_policies[(size_t)l];
    if (p.kind == PolicyKind::TopK && !p.heads_file.empty()) groups[{p.heads_file, p.retrieval}].push_back(l);
  }
  for (const auto& [key, layers] : groups) {
    STRIDE_ASSIGN_OR_RETURN(const HeadProfile profile, read_head_profile(key.first));
    STRIDE_RETURN_IF_ERROR(check_profile_model(profile, model));
    const int n_kv = profile.n_kv_heads;
    std::vector<uint8_t> takes_part(profile.distant_mass.size(), 0);
    for (const int l : layers)
      for (int h = 0; h < n_kv; ++h) {
        const size_t i = (size_t)l * n_kv + h;
        takes_part[i] = profile.distant_mass[i] >= 0.0;
      }
    const std::vector<double> shares = head_shares_from_mass(profile.distant_mass, takes_part, key.second);
    for (const int l : layers) {
      layer_policies[(size_t)l].head_shares = shares;
      layer_policies[(size_t)l].head_layer = l;
    }
  }
  return Status::Ok();
}

}  // namespace stride
