#pragma once
// The data umbrella: datasets, samplers, DataLoader (torch.utils.data), file datasets
// (torchvision.datasets) and image transforms (torchvision.transforms).
#include "ember/data/collate.h"
#include "ember/data/dataloader.h"
#include "ember/data/dataset.h"
#include "ember/data/datasets.h"
#include "ember/data/sampler.h"
#include "ember/data/transforms.h"
