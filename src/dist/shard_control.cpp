#include "dist/shard_control.h"

#include <nlohmann/json.hpp>

namespace stride::dist {

namespace {

// Broadcast first, so a worker knows what follows and how many bytes.
struct JobHeader {
  int32_t kind = 0;
  int32_t reserved = 0;
  int64_t payload_bytes = 0;
};

}  // namespace

std::string encode_job(const ShardJob& job) {
  if (job.kind == ShardJob::Kind::Heartbeat) return {};
  const GenerateOptions& g = job.options.generate;
  const SamplingParams& s = g.sampling;
  nlohmann::json bias = nlohmann::json::array();
  for (const LogitBias& b : s.logit_bias) bias.push_back({b.id, b.bias});
  nlohmann::json j = {
      {"request_id", job.request_id},
      {"prompt", job.prompt},
      {"max_tokens", g.max_tokens},
      {"ignore_eos", g.ignore_eos},
      {"stop", g.stop},
      {"render_special", job.options.render_special},
      {"rank0_may_stop", job.options.rank0_may_stop},
      {"shard_tokens", job.options.shard_tokens},
      {"temperature", s.temperature},
      {"top_k", s.top_k},
      {"top_p", s.top_p},
      {"min_p", s.min_p},
      {"repeat_penalty", s.repeat_penalty},
      {"repeat_last_n", s.repeat_last_n},
      {"frequency_penalty", s.frequency_penalty},
      {"presence_penalty", s.presence_penalty},
      {"seed", s.seed},
      {"logit_bias", bias},
  };
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Expected<ShardJob> decode_job(int32_t kind, const std::string& payload) {
  ShardJob job;
  if (kind == (int32_t)ShardJob::Kind::Heartbeat) return job;
  if (kind != (int32_t)ShardJob::Kind::Generate)
    return InvalidArgument("shard control: unknown message kind " + std::to_string(kind));
  job.kind = ShardJob::Kind::Generate;
  try {
    const nlohmann::json j = nlohmann::json::parse(payload);
    GenerateOptions& g = job.options.generate;
    SamplingParams& s = g.sampling;
    job.request_id = j.at("request_id").get<std::string>();
    job.prompt = j.at("prompt").get<std::vector<int32_t>>();
    g.max_tokens = j.at("max_tokens").get<int>();
    g.ignore_eos = j.at("ignore_eos").get<bool>();
    g.stop = j.at("stop").get<std::vector<std::string>>();
    job.options.render_special = j.at("render_special").get<bool>();
    job.options.rank0_may_stop = j.at("rank0_may_stop").get<bool>();
    job.options.shard_tokens = j.at("shard_tokens").get<int64_t>();
    s.temperature = j.at("temperature").get<float>();
    s.top_k = j.at("top_k").get<int>();
    s.top_p = j.at("top_p").get<float>();
    s.min_p = j.at("min_p").get<float>();
    s.repeat_penalty = j.at("repeat_penalty").get<float>();
    s.repeat_last_n = j.at("repeat_last_n").get<int>();
    s.frequency_penalty = j.at("frequency_penalty").get<float>();
    s.presence_penalty = j.at("presence_penalty").get<float>();
    s.seed = j.at("seed").get<uint64_t>();
    for (const auto& b : j.at("logit_bias")) s.logit_bias.push_back({b.at(0).get<int32_t>(), b.at(1).get<float>()});
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("shard control: a malformed job: ") + e.what());
  }
  return job;
}

Status send_job(ShardGroup& group, const ShardJob& job) {
  std::string payload = encode_job(job);
  JobHeader h;
  h.kind = (int32_t)job.kind;
  h.payload_bytes = (int64_t)payload.size();
  STRIDE_RETURN_IF_ERROR(group.broadcast(&h, sizeof h, 0));
  if (payload.empty()) return Status::Ok();
  return group.broadcast(payload.data(), payload.size(), 0);
}

Expected<ShardJob> receive_job(ShardGroup& group) {
  JobHeader h;
  STRIDE_RETURN_IF_ERROR(group.broadcast(&h, sizeof h, 0));
  if (h.payload_bytes < 0) return InvalidArgument("shard control: a negative payload size");
  std::string payload((size_t)h.payload_bytes, '\0');
  if (!payload.empty()) STRIDE_RETURN_IF_ERROR(group.broadcast(payload.data(), payload.size(), 0));
  return decode_job(h.kind, payload);
}

}  // namespace stride::dist
