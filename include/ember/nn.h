#pragma once
// The nn umbrella: #include <ember/nn.h>, namespace F = ember::nn::functional.
#include "ember/nn/activation.h"
#include "ember/nn/conv.h"
#include "ember/nn/containers.h"
#include "ember/nn/functional.h"
#include "ember/nn/linear.h"
#include "ember/nn/lora.h"
#include "ember/nn/loss.h"
#include "ember/nn/module.h"
#include "ember/nn/normalization.h"
#include "ember/nn/rnn.h"
#include "ember/nn/transformer.h"
#include "ember/nn/utils.h"
