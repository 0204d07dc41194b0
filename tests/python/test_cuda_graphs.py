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


# --- mode="reduce-overhead" in training: a forward graph and a backward graph behind one autograd node
# (compile/device_graphs.h). The wiring (static arguments, outside tensors read in place, the autograd
# node whose backward replays, calls made while a backward is to come, stale backwards, new parameter
# storage) is checked on the CPU with the graphs emulated (set_emulated_device_graphs): a forward "replay"
# reruns the capture's call and overwrites the static outputs and the activations the backward reads, as
# a real replay overwrites them; a backward "replay" takes the gradients of the latest forward. The real
# capture runs in the GPU test below.

@pytest.fixture
def emulated_cuda_graphs():
    before = ember._C._compile.set_emulated_device_graphs(True)
    yield
    ember._C._compile.set_emulated_device_graphs(before)


def _graphed_run(compiled):
    (entry,) = [e for e in compiled._ember_compiled.cache.values() if e.cudagraph]
    return entry.cudagraph


def _mlp_pair(device="cpu", seed=3):
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(24, 48), nn.GELU(), nn.LayerNorm(48), nn.Linear(48, 6)).to(device)
    ref = nn.Sequential(nn.Linear(24, 48), nn.GELU(), nn.LayerNorm(48), nn.Linear(48, 6)).to(device)
    ref.load_state_dict(model.state_dict())
    return model, ref


def _warmed(seed, calls):
    """_mlp_pair's model compiled with mode="reduce-overhead", after `calls` training calls on one x
    (the third captures the CUDA graphs)."""
    model, ref = _mlp_pair(seed=seed)
    compiled = ember.compile(model, mode="reduce-overhead")
    x = ember.randn(16, 24)
    for _ in range(calls):
        compiled(x).sum().backward()
    return model, ref, compiled, x


def _train_both(compiled, model, ref, steps, device="cpu", input_grad=False):
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    opt_ref = ember.optim.AdamW(ref.parameters(), lr=1e-2)
    for step in range(steps):
        x = ember.randn(16, 24, device=device, requires_grad=input_grad)
        xr = x.detach().clone().requires_grad_(input_grad)
        out, want = compiled(x), ref(xr)
        np.testing.assert_allclose(out.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-5, atol=1e-5)
        out.square().mean().backward()
        want.square().mean().backward()
        if input_grad:
            np.testing.assert_allclose(x.grad.cpu().numpy(), xr.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)
        for p, q in zip(model.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)
        opt.step(), opt_ref.step()
        opt.zero_grad(), opt_ref.zero_grad()


def test_reduce_overhead_trains_as_eager_through_the_graphs(emulated_cuda_graphs):
    model, ref = _mlp_pair()
    compiled = ember.compile(model, mode="reduce-overhead")
    _train_both(compiled, model, ref, 5, input_grad=True)
    c = compiled._ember_compiled
    # call 1 captures the ember graph, call 2 runs it (warming up cuBLAS and the backward), call 3 captures
    # the CUDA graphs and replays them
    assert c.cudagraph_captures == 1 and c.cudagraph_replays == 3
    g = _graphed_run(compiled)
    assert g.training and g.replays == 3
    out = compiled(ember.randn(16, 24, requires_grad=True))
    assert out.grad_fn.name() == "CompiledGraphsBackward"


def test_reduce_overhead_two_forwards_then_one_backward(emulated_cuda_graphs):
    model, ref = _mlp_pair(seed=4)
    compiled = ember.compile(model, mode="reduce-overhead")
    _train_both(compiled, model, ref, 3)  # the CUDA graphs captured and replayed once
    c = compiled._ember_compiled
    replays = c.cudagraph_replays
    xs = [ember.randn(16, 24) for _ in range(2)]
    a, b = compiled(xs[0]), compiled(xs[1])  # b: a's backward is to come, so b must not overwrite a's activations
    assert c.cudagraph_replays == replays + 1
    (a.square().mean() + b.square().mean()).backward()
    ar, br = ref(xs[0]), ref(xs[1])
    (ar.square().mean() + br.square().mean()).backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)
    # with that backward done, the next call replays again
    model.zero_grad(), ref.zero_grad()
    compiled(xs[0]).sum().backward()
    assert c.cudagraph_replays == replays + 2


def test_reduce_overhead_outputs_dropped_without_backward_free_the_graph(emulated_cuda_graphs):
    _, _, compiled, x = _warmed(5, 3)
    c = compiled._ember_compiled
    before = c.cudagraph_replays
    compiled(x)  # no backward; its output dropped at once
    compiled(x)
    assert c.cudagraph_replays == before + 2


def test_reduce_overhead_stale_backward_is_an_error(emulated_cuda_graphs):
    _, _, compiled, x = _warmed(6, 2)
    out = compiled(x)  # replayed
    loss = out.sum()
    loss.backward(retain_graph=True)
    compiled(x * 2).sum().backward()  # a replay overwrites out's activations
    with pytest.raises(RuntimeError, match="reduce-overhead.*overwrote.*mode='default'"):
        loss.backward()


def test_reduce_overhead_new_parameter_storage_captures_again(emulated_cuda_graphs):
    model, ref, compiled, x = _warmed(7, 3)
    c = compiled._ember_compiled
    assert c.cudagraph_captures == 1
    with ember.no_grad():
        model[0].weight.data = model[0].weight.detach() * 0.5 + 0.1  # new storage, same parameter
        ref[0].weight.copy_(model[0].weight)
    out = compiled(x)
    assert c.cudagraph_captures == 2
    np.testing.assert_allclose(out.detach().numpy(), ref(x).detach().numpy(), rtol=1e-5, atol=1e-5)


@gpu
def test_compile_reduce_overhead_trains_as_eager_on_the_gpu():
    model, ref = _mlp_pair("cuda", seed=8)
    compiled = ember.compile(model, mode="reduce-overhead")
    _train_both(compiled, model, ref, 5, "cuda", input_grad=True)
    c = compiled._ember_compiled
    assert c.cudagraph_captures == 1 and c.cudagraph_replays == 3, c.cudagraph_failures


def test_reduce_overhead_inference_outputs_are_the_graphs_own(emulated_cuda_graphs):
    model, ref = _mlp_pair(seed=9)
    compiled = ember.compile(model.eval(), mode="reduce-overhead")
    outs = []
    with ember.no_grad():
        for _ in range(4):
            x = ember.randn(16, 24)
            outs.append(compiled(x))
            np.testing.assert_allclose(outs[-1].numpy(), ref(x).numpy(), rtol=1e-5, atol=1e-5)
    assert not _graphed_run(compiled).training and _graphed_run(compiled).replays == 2
    # as in torch, a replay's output is the graph's tensor: the next replay overwrites it
    assert outs[2].data_ptr() == outs[3].data_ptr() != outs[1].data_ptr()


def test_capture_forward_backward_emulated(emulated_cuda_graphs):
    # make_graphed_callables' core through its binding: static inputs read, outputs without grad,
    # an unused input, a missing output gradient
    x, w = ember.randn(3, 8, requires_grad=True), ember.randn(8, 4, requires_grad=True)
    unused = ember.randn(2, requires_grad=True)
    c = ember.cuda.graphs.capture_forward_backward(lambda: (x @ w, (x @ w).argmax(1)), [x, w, unused], 0,
                                                   allow_unused=True)
    assert c.static_grad_outputs[1] is None and c.static_grad_inputs[2] is None
    with ember.no_grad():
        x.copy_(ember.randn(3, 8))
    c.replay_forward()
    out, idx = c.static_outputs
    want = (x @ w).detach()
    np.testing.assert_allclose(out.detach().numpy(), want.numpy(), rtol=1e-6)
    assert ember.equal(idx, want.argmax(1))
    gx, gw, gu = c.replay_backward([ember.ones(3, 4), None])
    assert gu is None
    np.testing.assert_allclose(gx.numpy(), (ember.ones(3, 4) @ w.detach().t()).numpy(), rtol=1e-6)
    np.testing.assert_allclose(gw.numpy(), (x.detach().t() @ ember.ones(3, 4)).numpy(), rtol=1e-6)
    assert gx.data_ptr() != c.static_grad_inputs[0].data_ptr()  # copies, not the graph's buffers
    with pytest.raises(ValueError, match="replay_backward: expected 2 output gradients, got 1"):
        c.replay_backward([None])


def test_reduce_overhead_without_graphs_says_why_and_stays_correct(emulated_cuda_graphs):
    w = ember.randn(8, requires_grad=True)

    def f(x):
        return x * w, x  # returns its argument: a replay could only hand back the graph's copy

    compiled = ember.compile(f, mode="reduce-overhead")
    for _ in range(4):
        x = ember.randn(8)
        y, same = compiled(x)
        assert same is x and ember.allclose(y, x * w)
    c = compiled._ember_compiled
    assert c.cudagraph_captures == 0 and c.cudagraph_failures == ["it returns one of its inputs"]


def test_cudagraphs_backend_replays_the_captured_ops_without_generated_kernels(emulated_cuda_graphs):
    assert ember.compiler.list_backends() == ["cudagraphs", "inductor"]
    assert ember._dynamo.list_backends(exclude_tags=()) == ["aot_eager", "cudagraphs", "eager", "inductor"]
    model, ref = _mlp_pair(seed=10)
    compiled = ember.compile(model, backend="cudagraphs")
    _train_both(compiled, model, ref, 4, input_grad=True)
    c = compiled._ember_compiled
    assert c.cudagraph_captures == 1 and c.cudagraph_replays == 2
    assert all(e.graph.fused_kernels == 0 for e in c.cache.values())  # the ops replayed as they are
    w = ember.randn(8, 8, requires_grad=True)

    def chain(x):
        return ((x @ w).tanh() * 2.0 + 1.0).sigmoid()

    x = ember.randn(4, 8)
    kernels = {}
    for backend in ("inductor", "cudagraphs"):
        f = ember.compile(chain, backend=backend)
        for _ in range(3):
            assert ember.allclose(f(x), chain(x))
        kernels[backend] = sum(e.graph.fused_kernels for e in f._ember_compiled.cache.values())
    assert kernels == {"inductor": 1, "cudagraphs": 0}
    with pytest.raises(ValueError, match="unknown backend 'tensorrt'"):
        ember.compile(model, backend="tensorrt")


def test_mark_step_begin_gives_up_pending_backwards(emulated_cuda_graphs):
    _, _, compiled, x = _warmed(11, 3)
    c = compiled._ember_compiled
    kept = compiled(x).sum()  # replayed; its backward is to come
    before = c.cudagraph_replays
    compiled(x)  # waits for kept's backward: runs the graph without replaying
    assert c.cudagraph_replays == before
    ember.compiler.cudagraph_mark_step_begin()  # (an evaluation loop in grad mode: kept is done with)
    compiled(x)
    assert c.cudagraph_replays == before + 1
    with pytest.raises(RuntimeError, match="overwrote"):
        kept.backward()
