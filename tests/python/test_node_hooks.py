"""torch.autograd.graph.Node hooks: register_prehook (the gradients arriving at a node, may be
replaced), register_hook (the gradients it computed and those that arrived, may replace the
computed ones), handles that remove them, and Node.metadata."""
import numpy as np
import pytest

import ember


def test_prehook_sees_and_replaces_arriving_gradients():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    seen = []

    def pre(grad_outputs):
        seen.append(grad_outputs[0].tolist())
        return (grad_outputs[0] * 10,)

    handle = y.grad_fn.register_prehook(pre)
    y.backward(ember.ones(3))
    assert seen == [[1.0, 1.0, 1.0]]
    assert x.grad.tolist() == [20.0, 40.0, 60.0]  # 10 * 2x
    handle.remove()
    x.grad = None
    y2 = x * x
    y2.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_post_hook_sees_both_sides_and_replaces_grad_inputs():
    a = ember.tensor([2.0], requires_grad=True)
    b = ember.tensor([3.0], requires_grad=True)
    c = a * b
    record = {}

    def post(grad_inputs, grad_outputs):
        record["in"] = [g.item() for g in grad_inputs]
        record["out"] = [g.item() for g in grad_outputs]
        return (grad_inputs[0], ember.zeros(1))  # keep a's, drop b's

    c.grad_fn.register_hook(post)
    (c * 5).sum().backward()
    assert record == {"in": [15.0, 10.0], "out": [5.0]}
    assert a.grad.item() == 15.0 and b.grad.item() == 0.0


def test_hook_order_errors_and_metadata():
    x = ember.tensor([1.0], requires_grad=True)
    y = x.exp()
    order = []
    y.register_hook(lambda g: order.append("tensor"))
    y.grad_fn.register_prehook(lambda go: order.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: order.append("post"))
    y.backward()
    assert order == ["tensor", "pre", "post"]  # tensor hooks run before the node's, as torch
    z = x.exp()
    z.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="returned an incorrect number of values"):
        z.backward()
    w = x.exp()
    w.grad_fn.register_hook(lambda gi, go: 3)
    with pytest.raises(TypeError, match="must return None or a tuple"):
        w.backward()
    with pytest.raises(TypeError, match="must be callable"):
        w.grad_fn.register_hook(5)
    v = x * 2
    v.grad_fn.metadata["tag"] = "double"
    assert v.grad_fn.metadata == {"tag": "double"}
    assert v.grad_fn.metadata is v.grad_fn.metadata


def test_hooks_on_the_grad_accumulator_of_a_leaf():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    acc = (w * 1).grad_fn.next_functions[0][0]  # AccumulateGrad
    assert acc.name() == "torch::autograd::AccumulateGrad" or "AccumulateGrad" in acc.name()
    arrived = []
    acc.register_prehook(lambda go: arrived.append(go[0].tolist()))
    (w * 3).sum().backward()
    assert arrived == [[3.0, 3.0]] and w.grad.tolist() == [3.0, 3.0]
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])
