// `stride model ...`: publish and list model versions; encrypt, decrypt and
// re-key model files at rest.
//   stride model publish --model-dir D --version V FILE
//   stride model list --model-dir D [--json]
//   stride model activate --model-dir D VERSION   (served by `stride serve --model-dir D` from then on)
//   stride model genkey OUT
//   stride model encrypt --key-file K IN OUT
//   stride model decrypt --key-file K IN OUT
//   stride model rotate-key --old-key-file A --new-key-file B FILE
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/atomic_file.h"
#include "loader/encrypted_file.h"
#include "loader/model_versions.h"

namespace stride::cli {

namespace {

struct ModelArgs {
  std::string model_dir, version, file, key_file, old_key_file, new_key_file, in, out;
  bool json = false;
};

int publish(const ModelArgs& a) {
  auto v = publish_model_version(a.model_dir, a.version, a.file);
  if (!v) return fail(v.status());
  std::printf("published %s: %s (%llu bytes, sha256 %s)\n", v->version.c_str(), v->path.c_str(),
              (unsigned long long)v->bytes, v->sha256.c_str());
  return 0;
}

int activate(const ModelArgs& a) {
  if (Status st = set_active_model_version(a.model_dir, a.version); !st.ok()) return fail(st);
  std::printf("%s is the active version of %s (a running server follows on SIGHUP or POST /admin/model)\n",
              a.version.c_str(), a.model_dir.c_str());
  return 0;
}

int list(const ModelArgs& a) {
  auto all = list_model_versions(a.model_dir);
  if (!all) return fail(all.status());
  const auto active = read_active_model_version(a.model_dir);
  auto is_active = [&](const ModelVersion& v) { return active.ok() && *active == v.version; };
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : *all) {
      out.push_back({{"version", v.version}, {"path", v.path}, {"sha256", v.sha256}, {"bytes", v.bytes},
                     {"encrypted", is_encrypted_model(v.path)}, {"active", is_active(v)}});
    }
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  for (const auto& v : *all) {
    std::printf("%s %-16s %s  %12llu  %s%s\n", is_active(v) ? "*" : " ", v.version.c_str(), v.sha256.c_str(),
                (unsigned long long)v.bytes, v.path.c_str(), is_encrypted_model(v.path) ? "  (encrypted)" : "");
  }
  return 0;
}

int genkey(const ModelArgs& a) {
  auto hex = generate_model_key_hex();
  if (!hex) return fail(hex.status());
  // Readable by its owner only, and never over an existing file: replacing a
  // key would make every model encrypted under it unreadable.
  if (Status st = write_file_atomic(a.out, *hex + "\n", 0600, AtomicFile::Mode::kNoReplace); !st.ok())
    return fail(st);
  std::printf("wrote a new 256-bit key to %s\n", a.out.c_str());
  return 0;
}

int crypt(const ModelArgs& a, bool encrypt) {
  auto key = read_model_key_file(a.key_file);
  if (!key) return fail(key.status());
  Status st = encrypt ? encrypt_file(a.in, a.out, *key) : decrypt_file(a.in, a.out, *key);
  if (!st.ok()) return fail(st);
  std::printf("%s %s -> %s\n", encrypt ? "encrypted" : "decrypted", a.in.c_str(), a.out.c_str());
  return 0;
}

int rotate(const ModelArgs& a) {
  auto old_key = read_model_key_file(a.old_key_file);
  if (!old_key) return fail(old_key.status());
  auto new_key = read_model_key_file(a.new_key_file);
  if (!new_key) return fail(new_key.status());
  if (Status st = rotate_model_key(a.file, *old_key, *new_key); !st.ok()) return fail(st);
  std::printf("re-encrypted %s under the new key\n", a.file.c_str());
  return 0;
}

}  // namespace

void add_model_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ModelArgs>();
  CLI::App* cmd = app.add_subcommand("model", "model versions (publish, list) and encryption at rest");
  cmd->require_subcommand(1);

  CLI::App* pub = cmd->add_subcommand("publish", "copy a model file in as a new version and record its sha256");
  pub->add_option("--model-dir", a->model_dir, "directory of versions")->required();
  pub->add_option("--version", a->version, "version name, e.g. v2")->required();
  pub->add_option("file", a->file, "model file (.gguf, plain or encrypted)")->required();
  pub->callback([a, &exit_code] { exit_code = publish(*a); });

  CLI::App* ls = cmd->add_subcommand("list", "list the published versions");
  ls->add_option("--model-dir", a->model_dir, "directory of versions")->required();
  ls->add_flag("--json", a->json, "one JSON array");
  ls->callback([a, &exit_code] { exit_code = list(*a); });

  CLI::App* act = cmd->add_subcommand("activate", "record VERSION in <model-dir>/ACTIVE: the version a server "
                                                   "configured with model_version 'active' (the default) serves");
  act->add_option("--model-dir", a->model_dir, "directory of versions")->required();
  act->add_option("version", a->version, "a published version")->required();
  act->callback([a, &exit_code] { exit_code = activate(*a); });

  CLI::App* gen = cmd->add_subcommand("genkey", "write a new random AES-256 key (64 hex digits) to a new file");
  gen->add_option("out", a->out, "key file to write (mode 0600)")->required();
  gen->callback([a, &exit_code] { exit_code = genkey(*a); });

  CLI::App* enc = cmd->add_subcommand("encrypt", "encrypt a model file with AES-256-GCM");
  enc->add_option("--key-file", a->key_file, "64 hex digits or 32 raw bytes")->required();
  enc->add_option("in", a->in, "plain model file")->required();
  enc->add_option("out", a->out, "encrypted output")->required();
  enc->callback([a, &exit_code] { exit_code = crypt(*a, true); });

  CLI::App* dec = cmd->add_subcommand("decrypt", "decrypt an encrypted model file");
  dec->add_option("--key-file", a->key_file, "64 hex digits or 32 raw bytes")->required();
  dec->add_option("in", a->in, "encrypted model file")->required();
  dec->add_option("out", a->out, "plain output")->required();
  dec->callback([a, &exit_code] { exit_code = crypt(*a, false); });

  CLI::App* rot = cmd->add_subcommand("rotate-key", "re-encrypt a model file in place under a new key (and update its version's SHA256)");
  rot->add_option("--old-key-file", a->old_key_file, "current key")->required();
  rot->add_option("--new-key-file", a->new_key_file, "new key")->required();
  rot->add_option("file", a->file, "encrypted model file")->required();
  rot->callback([a, &exit_code] { exit_code = rotate(*a); });
}

}  // namespace stride::cli
