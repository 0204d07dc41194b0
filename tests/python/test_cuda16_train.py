"""Training pieces on CUDA (issue 16): autograd through CUDA tensors, the optimizers' update
kernels, CUDA generators and their state, checkpoints that remember the device. Each test body
runs on the CPU always and on cuda:0 when there is a GPU, and compares with the CPU."""
import io
import zipfile

import numpy as np
import pytest

import ember

NO_GPU = "no CUDA GPU on this machine: the CUDA backend compiled but did not run"
DEVICES = ["cpu", "cuda"]


def need(device):
    if device == "cuda" and not ember.cuda.is_available():
        pytest.skip(NO_GPU)


def tensors(seed, *shapes, dtype=ember.float32):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.standard_normal(s), dtype=dtype) for s in shapes]


OPTIMIZERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("name,kwargs", OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_optimizer_steps_match_the_cpu(device, dtype, name, kwargs):
    need(device)
    p0, w0 = tensors(1, (5, 3), (7,), dtype=dtype)
    grads = tensors(2, (5, 3), (7,), (5, 3), (7,), (5, 3), (7,), dtype=dtype)

    def run(dev):
        # A transposed parameter goes through the non-contiguous path.
        a = p0.t().contiguous().t().clone().to(dev).detach().requires_grad_()
        b = w0.clone().to(dev).detach().requires_grad_()  # w0.to("cpu") is w0 itself: the CPU run must not move it
        opt = getattr(ember.optim, name)([a, b], **kwargs)
        for step in range(3):
            a.grad = grads[2 * step].to(dev)
            b.grad = grads[2 * step + 1].to(dev)
            opt.step()
        return a.detach().cpu(), b.detach().cpu(), opt

    ref_a, ref_b, _ = run("cpu")
    a, b, opt = run(device)
    tol = 1e-5 if dtype == ember.float32 else 1e-12
    np.testing.assert_allclose(a.numpy(), ref_a.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(b.numpy(), ref_b.numpy(), rtol=tol, atol=tol)
    for state in opt.state.values():
        for v in state.values():
            if isinstance(v, ember.Tensor):
                assert v.device.type == device


@pytest.mark.parametrize("device", DEVICES)
def test_half_parameters_update_on_the_gpu(device):
    need(device)
    if device == "cpu":
        pytest.skip("the CPU's fused optimizers take float32/float64 parameters only")
    p = ember.ones(8, dtype=ember.float16, device=device, requires_grad=True)
    opt = ember.optim.Adam([p], lr=0.5)
    p.grad = ember.ones(8, dtype=ember.float16, device=device)
    opt.step()
    np.testing.assert_allclose(p.detach().float().cpu().numpy(), np.full(8, 0.5), atol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_through_a_small_network(device):
    need(device)
    x, w1, b1, w2 = tensors(3, (6, 4), (4, 8), (8,), (8, 3))

    def run(dev):
        params = [t.to(dev).detach().requires_grad_() for t in (w1, b1, w2)]
        h = (x.to(dev) @ params[0] + params[1]).relu()
        y = (h @ params[2]).tanh()
        loss = (y * y).mean() + y.sum(dim=1).exp().mean()
        loss.backward()
        assert loss.device.type == dev
        return loss.item(), [p.grad.cpu().numpy() for p in params]

    ref_loss, ref_grads = run("cpu")
    loss, grads = run(device)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_mixing_devices_in_one_op_raises_torchs_error(device):
    need(device)
    if device == "cpu":
        pytest.skip("needs two device types")
    a = ember.ones(3, device="cuda")
    b = ember.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b


# ---------------------------------------------------------------- generators
def test_cuda_generator_needs_a_gpu():
    if ember.cuda.is_available():
        pytest.skip("this machine has a GPU")
    if ember.version.cuda is None:
        pytest.skip("built without the CUDA backend")
    with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
        ember.Generator(device="cuda")
    assert ember.cuda.default_generators == ()
    assert ember.Generator().device == ember.device("cpu")


def test_fork_rng_restores_the_cpu_state_without_a_gpu():
    before = ember.rand(3)
    ember.manual_seed(7)
    with ember.random.fork_rng():
        inside = ember.rand(3)
    after = ember.rand(3)
    np.testing.assert_array_equal(inside.numpy(), after.numpy())
    assert before.shape == (3,)


def test_cuda_generator_state_is_seed_and_offset():
    if not ember.cuda.is_available():
        pytest.skip(NO_GPU)
    g = ember.Generator(device="cuda")
    assert g.device == ember.device("cuda", 0)
    g.manual_seed(123)
    state = g.get_state()
    assert state.dtype == ember.uint8 and state.shape == (16,)
    assert int.from_bytes(bytes(state.tolist()[:8]), "little") == 123
    assert int.from_bytes(bytes(state.tolist()[8:]), "little") == 0
    ember.cuda.manual_seed(5)
    s = ember.cuda.get_rng_state()
    a = ember.rand(1000, device="cuda")
    ember.cuda.set_rng_state(s)
    b = ember.rand(1000, device="cuda")
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    assert len(ember.cuda.default_generators) == ember.cuda.device_count()
    with ember.random.fork_rng():
        ember.rand(10, device="cuda")
    c = ember.rand(1000, device="cuda")
    assert not np.array_equal(b.cpu().numpy(), c.cpu().numpy())


# ---------------------------------------------------------------- checkpoints
def with_location(data, location):
    """A checkpoint's bytes with every storage's recorded location replaced (as if saved there)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename.endswith("data.pkl"):
                old = b"X\x03\x00\x00\x00cpu"
                assert old in body
                body = body.replace(old, b"X" + len(location).to_bytes(4, "little") + location.encode())
            dst.writestr(info.filename, body)
    return out.getvalue()


def gpu_checkpoint(obj):
    buf = io.BytesIO()
    ember.save(obj, buf)
    return io.BytesIO(with_location(buf.getvalue(), "cuda:0"))


def test_a_gpu_checkpoint_on_a_cpu_only_machine():
    if ember.cuda.is_available():
        pytest.skip("this machine has a GPU")
    w = ember.arange(6.0).reshape(2, 3)
    state = {"w": w, "w_t": w.t()}
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        ember.load(gpu_checkpoint(state))
    for mapping in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage):
        got = ember.load(gpu_checkpoint(state), map_location=mapping)
        assert got["w"].device.type == "cpu"
        np.testing.assert_array_equal(got["w"].numpy(), w.numpy())
        np.testing.assert_array_equal(got["w_t"].numpy(), w.t().numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_checkpoints_come_back_on_their_device(device, tmp_path):
    need(device)
    w = ember.arange(6.0, device=device).reshape(2, 3)
    state = {"w": w, "w_t": w.t(), "row": w[1]}
    path = tmp_path / "ckpt.pt"
    ember.save(state, path)
    got = ember.load(path)
    assert all(v.device == w.device for v in got.values())
    np.testing.assert_array_equal(got["w_t"].cpu().numpy(), w.t().cpu().numpy())
    np.testing.assert_array_equal(got["row"].cpu().numpy(), [3.0, 4.0, 5.0])
    # views of one storage stay one storage
    with zipfile.ZipFile(path) as z:
        assert len([n for n in z.namelist() if "/data/" in n]) == 1
    cpu = ember.load(path, map_location="cpu")
    assert all(v.device.type == "cpu" for v in cpu.values())
