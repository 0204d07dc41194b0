#pragma once
// Distributed checkpoints from C++ (Python's is ember.distributed.checkpoint; both read and write
// the same layout): every rank writes its pieces of each tensor in parallel, and a checkpoint
// loads into any other layout or world size.
//
//   dir/.metadata                      JSON: each key's global shape, dtype and pieces
//                                      (offsets, sizes, file, name in the file)
//   dir/__<rank>_<save id>.safetensors the pieces that rank wrote
//
// A piece held by several ranks (a replicated tensor) is written once, by the lowest. Loading
// copies into each target piece the parts of the saved pieces that overlap it. Saving is atomic:
// after every rank has written, rank 0 replaces .metadata (temporary file, fsync, rename) and
// only then deletes the previous save's files, so a crash leaves the old or the new checkpoint.
//
//   auto state = fsdp.sharded_state_dict();            // this rank's dim-0 pieces
//   checkpoint::save(state, "ckpt", *pg);
//   checkpoint::load(state, "ckpt");  fsdp.load_sharded_state_dict(state);   // any world size
#include <string>
#include <utility>
#include <vector>

#include "ember/distributed/process_group.h"

namespace ember::distributed::checkpoint {

// This rank's piece of a global tensor (a replicated tensor: offsets all zero, the whole shape).
struct ShardedTensor {
  Tensor local;
  Shape global_shape;
  Shape offsets;
  static ShardedTensor replicated(const Tensor& t);
};

using DistStateDict = std::vector<std::pair<std::string, ShardedTensor>>;

// Every rank of `group` calls it with its own pieces.
void save(const DistStateDict& state, const std::string& dir, ProcessGroup& group);
// Fills each entry's `local` in place (its global shape must match the checkpoint's).
void load(DistStateDict& state, const std::string& dir);

}  // namespace ember::distributed::checkpoint
