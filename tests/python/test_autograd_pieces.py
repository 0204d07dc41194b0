"""split, chunk, split_with_sizes and unbind record one autograd node for all their pieces
(torch's SplitBackward0 / SplitWithSizesBackward0 / UnbindBackward0): its backward joins the
pieces' gradients in one cat or stack, zeros for pieces that got none."""
import ember
import pytest


def grads_through(cut, x, weights):
    x = x.detach().requires_grad_(True)
    pieces = cut(x)
    loss = sum((p * w).sum() for p, w in zip(pieces, weights) if w is not None)
    loss.backward()
    return x.grad, pieces


@pytest.mark.parametrize("name, cut, node", [
    ("split", lambda x: x.split(2, dim=1), "SplitBackward0"),
    ("split uneven", lambda x: x.split(3, dim=1), "SplitBackward0"),
    ("chunk", lambda x: x.chunk(3, dim=1), "SplitBackward0"),
    ("split_with_sizes", lambda x: x.split([1, 4, 2], dim=1), "SplitWithSizesBackward0"),
    ("unbind", lambda x: x.unbind(1), "UnbindBackward0"),
])
def test_one_node_joins_the_pieces_gradients(name, cut, node):
    x = ember.randn(3, 7, 2)
    n = len(cut(x))
    weights = [ember.full((1,), float(i + 1)) if i % 2 == 0 else None for i in range(n)]  # odd pieces unused
    grad, pieces = grads_through(cut, x, weights)
    assert all(p.grad_fn.name() == node and p.grad_fn is pieces[0].grad_fn for p in pieces)
    # the same gradient piece by piece, through narrow
    want = ember.zeros(3, 7, 2)
    start = 0
    for i, p in enumerate(cut(x)):
        length = p.shape[1] if p.dim() == 3 else 1
        if weights[i] is not None:
            want[:, start:start + length] = weights[i]
        start += length
    assert ember.equal(grad, want), name


def test_double_backward_through_split():
    x = ember.randn(4, 6, requires_grad=True)
    a, b = x.split(3, dim=1)
    y = (a.pow(3) + b.pow(2)).sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    want = ember.cat([6 * x[:, :3], ember.full((4, 3), 2.0)], 1)
    assert ember.allclose(gg, want)


def test_in_place_on_a_piece_and_versions():
    x = ember.randn(4, requires_grad=True)
    a, b = (x * 1).split(2)
    a.mul_(2)
    (a.sum() + b.sum()).backward()
    assert x.grad.tolist() == [2.0, 2.0, 1.0, 1.0]
    y = ember.randn(2, 3)
    p, q = y.unbind(0)
    p.add_(1)  # pieces are views of y
    assert ember.equal(y[0], p)


def test_lstm_backward_matches_a_cell_loop():
    # the LSTM unbinds its input projection per step: one node now instead of one per step
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(8, 6, batch_first=True)
    x = ember.randn(3, 11, 8, requires_grad=True)
    lstm(x)[0].pow(2).sum().backward()
    got = [x.grad] + [p.grad for p in lstm.parameters()]
    x2 = x.detach().requires_grad_(True)
    for p in lstm.parameters():
        p.grad = None
    cell = ember.nn.LSTMCell(8, 6)
    cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh = (lstm.weight_ih_l0, lstm.weight_hh_l0,
                                                                   lstm.bias_ih_l0, lstm.bias_hh_l0)
    h = c = ember.zeros(3, 6)
    total = 0
    for t in range(11):
        h, c = cell(x2[:, t], (h, c))
        total = total + h.pow(2).sum()
    total.backward()
    want = [x2.grad] + [p.grad for p in lstm.parameters()]
    assert all(ember.allclose(g, w, rtol=1e-4, atol=1e-6) for g, w in zip(got, want))


@pytest.mark.parametrize("name, fn", [
    ("split", lambda h: (lambda a, b, c: (a * b).sum() + c.pow(2).sum())(*h.split(4, dim=-1))),
    ("halves", lambda h: h[..., :6].sum() - h[..., 6:].pow(2).sum()),
    ("unbind", lambda h: sum(t.pow(2).sum() * (i + 1) for i, t in enumerate(h.unbind(1)))),
    ("chunk unused piece", lambda h: h.chunk(3, dim=-1)[1].exp().sum()),
])
def test_compiled_graphs_join_the_pieces(name, fn):
    """Capture records split as slices and unbind as selects; compile_graph joins them back into
    one node (join_pieces.cpp), so the backward is eager's: the same bits."""
    ember.manual_seed(0)
    w = ember.randn(5, 12, requires_grad=True)
    x = ember.randn(3, 5)
    f = lambda x, w: fn(x @ w)  # noqa: E731
    fast = ember.compile(f)
    for _ in range(2):
        w.grad = None
        fast(x, w).backward()
        got = w.grad
        w.grad = None
        f(x, w).backward()
        assert ember.equal(got, w.grad), name
    joined = "splits joined" in str(ember.compiler.explain(fast, x, w))
    assert joined == (name != "chunk unused piece")  # (dead code took the unused pieces: one slice left)
