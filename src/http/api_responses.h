#pragma once
// POST /v1/responses (api_responses.cpp).
#include "http/api_handler.h"

namespace stride::server {

class ResponsesHandler : public ApiHandler {
 public:
  using ApiHandler::ApiHandler;
  void responses(const HttpRequest& req, Responder& res, ApiCall& call);
};

}  // namespace stride::server
