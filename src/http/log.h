#pragma once
// JSON-lines logs on stderr, filtered by the configured level.
#include <string>
#include <utility>
#include <vector>

namespace stride::server {

enum class LogLevel { Debug = 0, Info = 1, Warning = 2, Error = 3 };

void set_log_level(const std::string& name);  // DEBUG | INFO | WARNING | ERROR
// fields: extra "key": value pairs; values that parse as numbers are written as numbers.
void log(LogLevel level, const std::string& message,
         const std::vector<std::pair<std::string, std::string>>& fields = {});

}  // namespace stride::server
