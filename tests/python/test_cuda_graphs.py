"""CUDA graphs (torch.cuda.graphs): CUDAGraph with the graph context manager, graph pools,
make_graphed_callables (forward and backward replayed) against eager, ember.compile's
mode="reduce-overhead"; the errors a capture gives. Without a GPU the GPU cases skip with the reason."""
import numpy as np
import pytest

import ember
import ember.nn as nn

NO_GPU = "no CUDA GPU on this machine: the CUDA backend compiled but did not run"
gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason=NO_GPU)


def test_without_a_gpu_the_api_exists_and_says_why():
    if ember.cuda.is_available():
        pytest.skip("this machine has a GPU")
    g = ember.cuda.CUDAGraph()
    assert not ember.cuda.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="CUDA"):
        g.capture_begin()
    # reduce-overhead on CPU tensors is plain compilation
    f = ember.compile(lambda x: (x * 2).relu() + 1, mode="reduce-overhead")
    x = ember.randn(5)
    for _ in range(3):
        assert ember.equal(f(x), (x * 2).relu() + 1)


@gpu
def test_graph_context_replays_with_new_inputs():
    x = ember.zeros(4096, device="cuda")
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        y = ember.tanh(x * 3 + 1).sum()
    for v in (0.25, -1.0, 2.0):
        x.fill_(v)
        g.replay()
        np.testing.assert_allclose(y.item(), 4096 * np.tanh(3 * v + 1), rtol=1e-5)
    # a second graph sharing the first one's pool reads its output
    g2 = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g2, pool=g.pool()):
        z = y * 2
    g.replay()
    g2.replay()
    np.testing.assert_allclose(z.item(), 2 * 4096 * np.tanh(3 * 2.0 + 1), rtol=1e-5)
    assert ember.cuda.graph_pool_handle() > 0


@gpu
def test_capture_errors_are_clear_and_leave_things_working():
    g = ember.cuda.CUDAGraph()
    x = ember.ones(8, device="cuda")
    with pytest.raises(RuntimeError, match="inside a CUDA graph capture"):
        with ember.cuda.graph(g):
            ember.randn(3, device="cuda")
    with pytest.raises(RuntimeError, match="while a CUDA graph is being captured"):
        with ember.cuda.graph(ember.cuda.CUDAGraph()):
            (x * 2).sum().item()
    assert not ember.cuda.is_current_stream_capturing()
    assert (x * 2).sum().item() == 16.0
    with pytest.raises(RuntimeError, match="non-default stream"):
        ember.cuda.CUDAGraph().capture_begin()


@gpu
def test_make_graphed_callables_trains_as_eager():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)).cuda()
    ref = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)).cuda()
    ref.load_state_dict(model.state_dict())
    sample = ember.randn(16, 32, device="cuda", requires_grad=True)
    graphed = ember.cuda.make_graphed_callables(model, (sample,))
    for step in range(3):
        x = ember.randn(16, 32, device="cuda", requires_grad=True)
        xr = x.detach().clone().requires_grad_(True)
        out, want = graphed(x), ref(xr)
        np.testing.assert_allclose(out.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
        out.square().sum().backward()
        want.square().sum().backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), xr.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)
        for p, q in zip(model.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)
            p.grad = None
            q.grad = None


@gpu
def test_compile_reduce_overhead_replays_a_graph():
    ember.manual_seed(1)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.LayerNorm(128), nn.Linear(128, 10)).cuda().eval()
    compiled = ember.compile(model, mode="reduce-overhead")
    with ember.no_grad():
        for _ in range(5):
            x = ember.randn(32, 64, device="cuda")
            got = compiled(x).clone()
            np.testing.assert_allclose(got.cpu().numpy(), model(x).cpu().numpy(), rtol=1e-5, atol=1e-5)
    c = compiled._ember_compiled
    assert c.cudagraph_captures == 1 and c.cudagraph_replays >= 3
    # with gradients wanted it runs the compiled graph without replaying
    y = compiled(ember.randn(32, 64, device="cuda"))
    assert y.requires_grad
