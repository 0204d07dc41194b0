#pragma once
// Collectives that autograd differentiates (torch.distributed.nn.functional): each backward runs
// the adjoint collective, so a loss computed from their outputs on every rank gives each rank the
// gradient of the sum of all ranks' losses. The building blocks of tensor parallelism (a
// row-parallel Linear's all_reduce, a sequence-parallel all_gather / reduce_scatter).
//   forward                      backward
//   all_reduce (SUM, AVG)        all_reduce of the gradient (same op)
//   all_gather (along dim 0)     reduce_scatter (SUM) of the gradient
//   reduce_scatter (SUM, dim 0)  all_gather of the gradient
//   broadcast from src           the gradients summed onto src (zero elsewhere)
#include <memory>

#include "ember/distributed/process_group.h"

namespace ember::distributed::functional {

Tensor all_reduce(const Tensor& input, const std::shared_ptr<ProcessGroup>& group, ReduceOp op = ReduceOp::SUM);
// [group size * n0, ...]: rank r's input at rows [r * n0, (r + 1) * n0).
Tensor all_gather(const Tensor& input, const std::shared_ptr<ProcessGroup>& group);
// input [group size * n0, ...] -> [n0, ...]: this rank's rows of the sum over ranks.
Tensor reduce_scatter(const Tensor& input, const std::shared_ptr<ProcessGroup>& group, ReduceOp op = ReduceOp::SUM);
Tensor broadcast(const Tensor& input, int src, const std::shared_ptr<ProcessGroup>& group);

}  // namespace ember::distributed::functional
