#pragma once
// Capture (ember.compile's first step): while a CaptureSession is open on a thread, every op
// dispatched there at the outermost level is recorded into a Graph as it runs eagerly (the
// Tracer layer of the dispatcher; ops that a kernel calls inside are the op's own business).
// What capture cannot stand for -- a value read back into the program (Tensor::item, tolist), a
// backward pass, a print -- is noted as a break: the function then runs eagerly (or, with
// fullgraph, fails naming the reason).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/compile/graph.h"

namespace ember::compiler {

class CaptureSession {
 public:
  // `inputs`: the tensors the function takes, one per input slot (the same tensor twice is one
  // value). Opens capture on this thread; sessions do not nest.
  explicit CaptureSession(const std::vector<Tensor>& inputs);
  ~CaptureSession();
  CaptureSession(const CaptureSession&) = delete;
  CaptureSession& operator=(const CaptureSession&) = delete;
  // Closes capture and returns the graph whose outputs are `outputs` (tensors the function made,
  // took, or captured as constants). `simplify` off: no constant folding or merging, only dead
  // code removal (passes.h; an export with dynamic shapes).
  Graph finish(const std::vector<Tensor>& outputs, bool simplify = true);
  // ember.compile(dynamic=True): the graph with dead code removed only (what symbolic sizes are
  // fitted on and specialised from: a size-made factory stays a node) and the simplified graph
  // (what runs at these sizes).
  struct Finished {
    Graph raw, simplified;
  };
  Finished finish_both(const std::vector<Tensor>& outputs);
  // The sizes that shaped the graph's structure, not only its numbers (split/chunk/unbind make one
  // node per piece): a graph fitted over sizes may vary none of them (note_size_shaped_structure).
  const std::vector<int64_t>& structure_sizes() const;
  // Closes capture without a graph (the function raised); the destructor does it too.
  void close();
  // The first break (empty if none): what the graph could not capture, and after which op.
  std::string break_reason() const;
  // Called at the first break, while the code that caused it is still on the stack (Python adds
  // the source line there); returns text to append to the reason.
  void on_break(std::function<std::string(const std::string&)> listener);
  int64_t ops_recorded() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// What a graph depends on besides the values of its inputs (the guards): each tensor's dtype,
// device, sizes, strides and requires_grad, which inputs are the same tensor, grad mode and the
// dispatcher layers switched on (autocast). Equal signatures can share a graph.
// `with_sizes` off: each tensor's rank and whether it is contiguous instead of its sizes and
// strides (dynamic=True groups the signatures that may share one graph with symbolic sizes).
std::string guard_signature(const std::vector<Tensor>& inputs, bool with_sizes = true);

namespace detail {
bool capturing();  // on this thread
// An opaque node: code the graph cannot see into (a Python custom op, an autograd.Function) that
// ran eagerly with the Tracer layer off. `replay` re-runs it on new inputs; `mutates`: it may
// write its inputs. Ignored when no capture is open.
// `args`: the call's structured arguments when it can be saved (a C++ custom op: its replay
// factory is registered under `name`); empty for Python code.
void record_opaque(const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                   Replay replay, bool mutates, std::vector<Arg> args = {});
// An op defined outside C++ (a Python custom op) whose calls a saved program can hold: the node's
// arguments are [tensors n, a string] (the call's other arguments, encoded by the caller), and a
// loaded node re-runs `run(string, tensors)`. Registered under `name` for the process.
using SavedOpRun = std::function<std::vector<Tensor>(const std::string& spec, const std::vector<Tensor>& inputs)>;
void register_saved_op(const std::string& name, SavedOpRun run);
// Ops dispatched here now would be recorded: a capture is open, not paused, and not broken.
bool tracing();
// A size that shapes what a capture records beyond arithmetic: split(k) records one slice per
// piece and unbind one select per index, a slice bound cut back to the size or a diagonal's
// shorter side make a result's size piecewise in it. The open capture notes it (CaptureSession::
// structure_sizes), so ember.compile's dynamic shapes keep it fixed.
void note_size_shaped_structure(int64_t size);
// A break in the capture on this thread, if one is open (Tensor::item, the autograd engine,
// Python's print).
void note_break(const std::string& what);
}  // namespace detail

}  // namespace ember::compiler
