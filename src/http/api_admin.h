#pragma once
// POST /admin/model: switches the served model, behind an admin key (api_admin.cpp).
#include "http/api_handler.h"

namespace stride::server {

class AdminHandler : public ApiHandler {
 public:
  using ApiHandler::ApiHandler;
  void admin_model(const HttpRequest& req, Responder& res, ApiCall& call);
};

}  // namespace stride::server
