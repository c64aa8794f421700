#pragma once
// POST /v1/embeddings, through the scheduler or the encoder service (api_embeddings.cpp).
#include "http/api_handler.h"

namespace stride::server {

class EmbeddingsHandler : public ApiHandler {
 public:
  using ApiHandler::ApiHandler;
  void embeddings(const HttpRequest& req, Responder& res, ApiCall& call);
};

}  // namespace stride::server
