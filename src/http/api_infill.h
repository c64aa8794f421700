#pragma once
// POST /infill, llama-server's fill-in-the-middle endpoint (api_infill.cpp).
#include "http/api_handler.h"

namespace stride::server {

class InfillHandler : public ApiHandler {
 public:
  using ApiHandler::ApiHandler;
  void infill(const HttpRequest& req, Responder& res, ApiCall& call);
};

}  // namespace stride::server
