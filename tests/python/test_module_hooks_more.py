"""nn.Module's torch 2.x additions: register_full_backward_pre_hook, the public state_dict and
load_state_dict hooks, set_submodule and Module.compile (in place)."""
import numpy as np
import pytest

import ember
import ember.nn as nn


def test_full_backward_pre_hook_sees_and_replaces_grad_output():
    lin = nn.Linear(3, 2)
    seen = []

    def pre(module, grad_output):
        seen.append(grad_output[0].clone())
        return (grad_output[0] * 2,)

    handle = lin.register_full_backward_pre_hook(pre)
    x = ember.randn(4, 3, requires_grad=True)
    lin(x).sum().backward()
    assert len(seen) == 1 and seen[0].tolist() == [[1.0, 1.0]] * 4
    # the doubled grad_output reached the parameters and the input
    np.testing.assert_allclose(lin.bias.grad.numpy(), [8.0, 8.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.ones((4, 2)) @ lin.weight.detach().numpy(), rtol=1e-6)
    handle.remove()
    lin.zero_grad()
    lin(ember.randn(4, 3)).sum().backward()
    assert len(seen) == 1 and lin.bias.grad.tolist() == [4.0, 4.0]

    order = []
    lin.register_full_backward_pre_hook(lambda m, go: order.append("pre"))
    lin.register_full_backward_hook(lambda m, gi, go: order.append("post"))
    lin(ember.randn(2, 3, requires_grad=True)).sum().backward()
    assert order == ["pre", "post"]


def test_state_dict_and_load_state_dict_hooks():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    calls = []
    model[0].register_state_dict_pre_hook(lambda m, prefix, keep_vars: calls.append(("pre", prefix)))

    def post(module, state_dict, prefix, local_metadata):
        state_dict[prefix + "extra"] = ember.ones(1)

    model[2].register_state_dict_post_hook(post)
    sd = model.state_dict()
    assert calls == [("pre", "0.")] and "2.extra" in sd
    model[2].register_state_dict_post_hook(lambda m, s, p, md: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        model.state_dict()

    target = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    seen = []
    target[0].register_load_state_dict_pre_hook(
        lambda m, state_dict, prefix, *rest: seen.append((type(m).__name__, prefix)))

    def forgive(module, incompatible):
        incompatible.unexpected_keys.clear()  # the hook may clear what strict would refuse

    target.register_load_state_dict_post_hook(forgive)
    result = target.load_state_dict(sd)  # "2.extra" is unexpected, but the post hook clears it
    assert seen == [("Linear", "0.")] and result.unexpected_keys == []
    assert target[0].weight.tolist() == model[0].weight.tolist()


def test_set_submodule_and_compile_in_place():
    model = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.Tanh(), nn.Linear(4, 2)))
    model.set_submodule("1.0", nn.ReLU())
    assert isinstance(model[1][0], nn.ReLU)
    with pytest.raises(AttributeError, match="has no attribute `missing`"):
        model.set_submodule("1.missing", nn.ReLU(), strict=True)
    with pytest.raises(ValueError, match="not an nn.Module"):
        model.set_submodule("0", 3)

    x = ember.randn(5, 3)
    eager = model(x)
    keys = list(model.state_dict())
    model.compile()
    assert model.__dict__.get("_compiled_call_impl") is not None
    np.testing.assert_allclose(model(x).detach().numpy(), eager.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert list(model.state_dict()) == keys  # in place: no "_orig_mod." prefix
    model(x).sum().backward()
    assert model[0].weight.grad is not None
    eager_model = nn.Linear(2, 2)
    eager_model.compile(backend="eager")
    assert eager_model.__dict__.get("_compiled_call_impl") is None
