#pragma once
// ember::optim: optimizers (and, appended by their authors, lr schedulers and gradient clipping).
#include "ember/optim/optimizer.h"
#include "ember/optim/fused.h"
#include "ember/optim/sgd.h"
#include "ember/optim/adam.h"
#include "ember/optim/rmsprop.h"
#include "ember/optim/adagrad.h"
#include "ember/optim/lr_scheduler.h"
