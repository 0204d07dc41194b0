#pragma once
// torch.distributed's error classes: DistError (a RuntimeError), DistStoreError for the store's
// timeouts and failures, DistNetworkError for connections, DistBackendError for a collective that
// failed or timed out in its backend.
#include "ember/core/errors.h"

namespace ember::distributed {

struct DistError : Error { using Error::Error; };
struct DistStoreError : DistError { using DistError::DistError; };
struct DistNetworkError : DistError { using DistError::DistError; };
struct DistBackendError : DistError { using DistError::DistError; };

}  // namespace ember::distributed
