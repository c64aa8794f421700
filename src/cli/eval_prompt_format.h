#pragma once
// How the evaluation prompts are put to a model: plain completion text, or
// the model's own chat template (stride eval, stride calibrate-heads).
#include <string>

#include "core/status.h"
#include "engine/engine.h"
#include "eval/ruler_prompt.h"

namespace stride::cli {

// mode: "auto" (the chat template when the model has one), "on" or "off";
// `label` names the format chosen ("off" or the template's name).
Expected<PromptFormat> prompt_format(Engine& engine, const std::string& mode, std::string& label);

}  // namespace stride::cli
