#pragma once
// A chat request's conversation as the model's template sees it. With the
// generic tool format, an assistant's calls become text of its turn, a tool
// result becomes a user turn and the tools are described in the system
// message; a template with a tool syntax of its own gets the calls, results
// and tools as they are and writes them itself.
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "serving/chat_template.h"
#include "serving/generation_request.h"

namespace stride::serving {

// Names of the calls made so far in a conversation, by id (a tool result
// without a `name` takes its call's).
using ToolCallNames = std::map<std::string, std::string>;

// The format tool calls are written in: the template's own when it renders
// (a template of the model's), the generic one otherwise.
ToolFormat tool_format_of(const Expected<ChatTemplate>& chat);

// Message `in` (role and content already in `out`) with its tool parts
// written for `format`; `names` learns the calls it makes.
void add_tool_parts(const ClientMessage& in, ToolFormat format, ToolCallNames& names, ChatMessage& out);

// Describes the tools in the system message (adding one when there is none).
void add_tools_system_text(std::vector<ChatMessage>& messages, const std::vector<ToolSpec>& tools,
                           const ToolChoice& choice);

// The rendered prompt of a chat request: its messages, tools and template
// variables through the template. Fails with the template's message.
Expected<RenderedChat> render_conversation(const GenerationRequest& g, const ChatTemplate& chat, ToolFormat format);

}  // namespace stride::serving
