#pragma once
// The umbrella header: #include <ember/ember.h> gives the whole C++ API.
#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/errors.h"
#include "ember/core/generator.h"
#include "ember/core/scalar.h"
#include "ember/cudnn_flags.h"
#include "ember/sdp_flags.h"
#include "ember/linalg.h"
#include "ember/matmul_precision.h"
#include "ember/ops.h"
#include "ember/tensor.h"
#include "ember/autograd/autograd.h"
