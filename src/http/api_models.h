#pragma once
// GET /v1/models and /v1/models/{model} (api_models.cpp).
#include <string>
#include <string_view>

#include "http/api_handler.h"
#include "http/json_fields.h"

namespace stride::server {

class ModelsHandler : public ApiHandler {
 public:
  using ApiHandler::ApiHandler;
  void models(Responder& res, ApiCall& call);
  void retrieve_model(Responder& res, ApiCall& call, std::string_view escaped_name);

 private:
  nlohmann::json model_object(const ApiCall& call, const std::string& name) const;
};

}  // namespace stride::server
