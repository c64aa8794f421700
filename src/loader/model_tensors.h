#pragma once
// Checks that a ModelSource holds every tensor its architecture needs, with
// the shapes the config implies, in dtypes stride can compute with.
#include "core/status.h"
#include "loader/model_source.h"

namespace stride {

Status check_model_tensors(const ModelSource& src);

}  // namespace stride
