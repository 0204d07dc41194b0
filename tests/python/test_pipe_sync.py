"""torch.distributed.pipeline.sync.Pipe (PyTorch 1.x's single-process GPipe; python/ember/distributed/
pipeline/sync.py): micro-batches through the partitions of a Sequential, values and gradients of
the Sequential itself, checkpointing by micro-batch."""
import pytest

import ember
import ember.nn as nn
from ember.distributed.pipeline.sync import Pipe


class Counting(nn.Module):  # counts forward runs (checkpointing reruns them in backward)
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x.tanh()


def model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), Counting(), nn.Linear(16, 3))


@pytest.mark.parametrize("chunks", [1, 3, 8, 20])
@pytest.mark.parametrize("checkpoint", ["except_last", "always", "never"])
def test_values_and_gradients_are_the_sequentials(chunks, checkpoint):
    ref, piped = model(), model()
    pipe = Pipe(piped, chunks=chunks, checkpoint=checkpoint)
    x = ember.randn(10, 6)
    out = pipe(x)
    assert out.is_owner() and out.to_here() is out.local_value()
    y = out.local_value()
    assert ember.allclose(y, ref(x), rtol=1e-5, atol=1e-6)
    (y * ember.arange(30.0).reshape(10, 3)).sum().backward()
    (ref(x) * ember.arange(30.0).reshape(10, 3)).sum().backward()
    for a, b in zip(piped.parameters(), ref.parameters()):
        assert ember.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-5)


def test_checkpointing_reruns_the_micro_batches_it_names():
    for mode, runs in [("never", 4), ("except_last", 4 + 3), ("always", 4 + 4)]:
        seq = model()
        pipe = Pipe(seq, chunks=4, checkpoint=mode)
        pipe(ember.randn(8, 6)).local_value().sum().backward()
        assert seq[1].calls == runs, mode
    seq = model()
    with ember.no_grad():  # nothing to recompute without a graph
        Pipe(seq, chunks=4).forward(ember.randn(8, 6))
    assert seq[1].calls == 4


def test_partitions_follow_the_devices_and_the_module_reads_as_a_sequential():
    seq = nn.Sequential(nn.ReLU(), nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 2))
    pipe = Pipe(seq, chunks=2)
    # torch's rule: every CPU child is a partition of its own (keys as torch 1.13's Pipe)
    assert len(pipe.partitions) == 4 and pipe.devices == [ember.device("cpu")] * 4
    assert len(pipe) == 4 and pipe[1] is seq[1]
    assert sorted(pipe.state_dict()) == ["partitions.1.0.bias", "partitions.1.0.weight", "partitions.3.0.bias",
                                         "partitions.3.0.weight"]


@pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA GPU on this machine: Pipe across devices not run")
def test_partitions_across_a_gpu_and_the_cpu():
    ref = model()
    seq = model()
    seq[0].to("cuda")
    pipe = Pipe(seq, chunks=4)
    assert [str(d) for d in pipe.devices] == ["cuda:0", "cpu", "cpu"]
    x = ember.randn(8, 6)
    y = pipe(x).local_value()
    assert y.device.type == "cpu" and ember.allclose(y, ref(x), rtol=1e-4, atol=1e-5)
    y.sum().backward()
    assert seq[0].weight.grad.device.type == "cuda"


def test_errors_as_torch():
    with pytest.raises(TypeError, match="module must be nn.Sequential to be partitioned"):
        Pipe(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="number of chunks must be positive integer"):
        Pipe(model(), chunks=0)
    with pytest.raises(ValueError, match="checkpoint is not one of 'always', 'except_last', or 'never'"):
        Pipe(model(), checkpoint="sometimes")
    with pytest.raises(NotImplementedError, match="deferred_batch_norm"):
        Pipe(model(), deferred_batch_norm=True)
    with pytest.raises(ValueError, match="batch size 4"):
        Pipe(model(), chunks=2)(ember.randn(4, 6), ember.randn(3, 6))
