"""ember.compile(dynamic=True): symbolic sizes fitted over captures (python/ember/_compile_dynamic.py).

Every test checks the results against eager at sizes that were never captured, and the counters
say whether those calls ran a fitted graph (specialisations) or were captured: a guard that
should have sent a call to capture and did not would show as a wrong value."""
import ember
import ember.nn.functional as F
import pytest


def _compiled(fast):
    return getattr(fast, "_ember_compiled", fast)


def _run(fast, fn, inputs, check=lambda a, b: ember.equal(a, b)):
    for args in inputs:
        got, want = fast(*args), fn(*args)
        assert got.shape == want.shape and check(got, want), (tuple(args[0].shape), got.shape, want.shape)


def _grads(f, x, m):
    """The gradients of f(x).pow(2).mean() for x and m's parameters (all cleared first)."""
    x.grad = None
    for p in m.parameters():
        p.grad = None
    f(x).pow(2).mean().backward()
    return [x.grad] + [p.grad for p in m.parameters()]


def _close(a, b):
    return ember.allclose(a, b, rtol=1e-5, atol=1e-6)


class Block(ember.nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.d, self.heads = d, heads
        self.ln = ember.nn.LayerNorm(d)
        self.qkv, self.proj = ember.nn.Linear(d, 3 * d), ember.nn.Linear(d, d)
        self.fc, self.out = ember.nn.Linear(d, 4 * d), ember.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln(x)).split(self.d, dim=2)  # over the fixed dim: no pin on t
        q, k, v = (z.reshape(b, t, self.heads, self.d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, self.d)
        x = x + self.proj(a)
        return x + self.out(F.gelu(self.fc(x)))


def test_a_transformer_block_fits_its_sequence_length():
    ember.manual_seed(0)
    m = Block().eval()
    fast = ember.compile(m, dynamic=True)
    with ember.no_grad():
        _run(fast, m, [(ember.randn(2, t, 32),) for t in range(5, 20)], _close)
    c = _compiled(fast)
    assert c.captures == 4 and c.specialisations == 11
    (group,) = c.groups.values()
    (regime,) = group.regimes.values()
    assert regime.symbols == [[(0, 1)]]  # input 0's dim 1
    # one compilation renumbered for every new length (compiled_template.h)
    assert (regime.renumbered, regime.specialised, regime.no_template) == (11, 0, None)


def _regime(fast):
    (group,) = _compiled(fast).groups.values()
    (regime,) = group.regimes.values()
    return regime


def test_renumbered_graphs_hold_far_from_the_captured_sizes():
    """Captured at 4 lengths, run at lengths up to 40x longer: the compiled graph (fused row kernels
    whose row length is the varying size, matmul epilogues, attention) renumbered, eager's values."""
    ember.manual_seed(0)
    m = Block().eval()

    def fn(x, w):
        h = m(x)
        e = (h - h.amax(-1, keepdim=True)).exp()  # a row kernel over the fixed width
        s = x.transpose(1, 2).softmax(-1) * 2.0  # and one over the varying length
        return e / e.sum(-1, keepdim=True) * w, s.pow(2).mean(-1, keepdim=True) + 1e-6
    fast = ember.compile(fn, dynamic=True)
    w = ember.randn(32)
    with ember.no_grad():
        for t in [5, 6, 7, 8, 9, 40, 3, 200, 11]:
            x = ember.randn(2, t, 32)
            got, want = fast(x, w), fn(x, w)
            assert all(g.shape == e.shape and ember.allclose(g, e, rtol=1e-5, atol=1e-6) for g, e in zip(got, want)), t
    regime = _regime(fast)
    assert regime.renumbered == 5 and regime.specialised == 0, (regime.renumbered, regime.no_template)
    compiled, fresh = regime.templates[True].at([123]), regime.program.specialise([123], True)
    assert compiled.fused_kernels >= 2 and compiled.fused_kernels == fresh.fused_kernels
    # a renumbered graph shares its template's; its own is built when asked for (explain, logs)
    assert compiled.ops == fresh.ops and "2, 123, 32" in compiled.describe()
    plain = lambda g: g.describe().replace(" (from the disk cache)", "")  # noqa: E731
    assert plain(compiled) == plain(fresh)


def test_a_size_that_reaches_one_is_compiled_anew_not_renumbered():
    """x[:, :-1] is t - 1 long: at t = 2 it is 1, where the passes may broadcast or squeeze what
    they did not at the captured sizes, so that size is compiled anew; the others renumber."""
    fn = lambda x: (x[:, :-1] * 2).softmax(-1) + 1  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(3, t),) for t in (4, 5, 6, 7, 8, 9, 2, 3, 12)], _close)
    regime = _regime(fast)
    assert (regime.renumbered, regime.specialised) == (4, 1)
    assert regime.templates[True].at([2]) is None and regime.templates[True].at([3]) is not None


_W16 = ember.randn(16, 16)
_RENUMBER_CORPUS = {  # functions of a varying first dim: each op family's numbers renumbered
    "chain_broadcast": lambda x: ((x * 2 + 1).sin() * x.mean(-1, keepdim=True)).relu(),
    "rows": lambda x: (x - x.amax(-1, keepdim=True)).exp() / (x - x.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True),
    "views": lambda x: x.reshape(-1, 2, 8).transpose(0, 1).contiguous().view(2, -1).sum(0),
    "cat_slice": lambda x: ember.cat([x, x[:-1] * 3, x[1:2]], 0).tanh(),
    "matmul": lambda x: F.gelu(x @ _W16 + 1, approximate="tanh") @ _W16.t(),
    "arange": lambda x: x * ember.arange(x.shape[0], dtype=x.dtype).unsqueeze(-1) + x.shape[0],
    "norms": lambda x: F.layer_norm(x, (16,)) + F.softmax(x.t(), -1).t(),
    "pad_roll": lambda x: F.pad(x, (1, 2, 0, 3)).roll(2, 0)[:x.shape[0]],
}


@pytest.mark.parametrize("name", list(_RENUMBER_CORPUS))
def test_renumbered_corpus_equals_eager(name):
    fn = _RENUMBER_CORPUS[name]
    fast = ember.compile(fn, dynamic=True)
    sizes = [4, 5, 6, 7, 2, 3, 9, 31, 64, 65, 127, 199]
    _run(fast, fn, [(ember.randn(t, 16),) for t in sizes], lambda a, b: ember.allclose(a, b, rtol=1e-4, atol=1e-5))
    regime = _regime(fast)
    compiled_anew = 1 if name == "cat_slice" else 0  # (x[:-1] at t = 2 is 1 long: compiled, not renumbered)
    assert (regime.renumbered, regime.specialised) == (len(sizes) - 4 - compiled_anew, compiled_anew), \
        (regime.renumbered, regime.no_template)


def test_two_sizes_renumber_one_compilation_and_train():
    """Batch and length both vary: the compiled graph's numbers are polynomials of both; gradients
    through its fused backward kernels at sizes never captured are eager's."""
    ember.manual_seed(0)
    m = Block()
    fast = ember.compile(m, dynamic=True)
    sizes = [(2, 5), (3, 5), (2, 7), (4, 6), (3, 9), (5, 4), (2, 8), (6, 11), (7, 3), (3, 30)]
    for b, t in sizes:
        x = ember.randn(b, t, 32, requires_grad=True)
        got, want = _grads(fast, x, m), _grads(m, x, m)
        assert all(ember.allclose(g, e, rtol=1e-4, atol=1e-6) for g, e in zip(got, want)), (b, t)
    regime = _regime(fast)
    assert len(regime.symbols) == 2 and regime.renumbered >= 2 and regime.specialised == 0, \
        (regime.symbols, regime.renumbered, regime.no_template)


def test_without_a_template_new_sizes_compile_anew(monkeypatch):
    """Where the compilations at the captured sizes differ beyond their numbers there is no template:
    each new size is specialised and compiled as before, with the reason in explain()."""
    from ember import _compile_dynamic

    def refuse(regime, fuse, why):
        why.append("its kernels, buffer plan or graph differ between the captured sizes")
    monkeypatch.setattr(_compile_dynamic, "_template", refuse)
    fn = lambda x: (x * 2).sin().softmax(-1)  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(3, t),) for t in (4, 5, 6, 7, 8, 19)], _close)
    regime = _regime(fast)
    assert (regime.renumbered, regime.specialised) == (0, 2)
    assert "0 renumbered the compiled graph, 3 compiled it anew (its kernels, buffer plan or graph differ" in \
        str(ember.compiler.explain(fast, ember.randn(3, 9)))


def test_a_template_refuses_sites_that_do_not_hold():
    """The C++ side checks what Python fitted: a site on no number of the graph, or a polynomial
    that does not give the graph's own number at the example sizes, is a ValueError."""
    import json
    from ember import _C
    fn = lambda x: (x * 2).sin()  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(3, t),) for t in (4, 5, 6, 7, 8)])
    regime = _regime(fast)
    base = regime.program.specialise([8], True)
    symbols = [{"name": "s0", "min": 2, "max": -1, "example": 8}]
    wrong = {"symbols": symbols, "symbolic": [{"at": "size", "item": 0, "index": 1, "element": -1, "poly": [[2, 1]]}]}
    with pytest.raises(ValueError, match="at the example sizes"):
        _C._compile.CompiledTemplate(base, json.dumps(wrong))
    nowhere = {"symbols": symbols, "symbolic": [{"at": "size", "item": 999, "index": 0, "element": -1, "poly": [[1, 1]]}]}
    with pytest.raises(ValueError, match="not a number of the graph"):
        _C._compile.CompiledTemplate(base, json.dumps(nowhere))
    with pytest.raises(ValueError, match="takes 1 sizes, got 2"):
        regime.templates[True].at([9, 9])


def test_training_through_a_fitted_graph_gives_eager_gradients():
    ember.manual_seed(0)
    m = Block()
    fast = ember.compile(m, dynamic=True)
    for t in list(range(4, 9)) + [13, 21]:
        x = ember.randn(3, t, 32, requires_grad=True)
        got, want = _grads(fast, x, m), _grads(m, x, m)
        assert all(ember.allclose(g, w, rtol=1e-4, atol=1e-6) for g, w in zip(got, want)), t
    assert _compiled(fast).specialisations == 3  # 8, 13 and 21
    assert _regime(fast).renumbered == 3


def test_mark_dynamic_switches_fitting_on():
    fn = lambda x: (x * 2).sin()  # noqa: E731
    fast = ember.compile(fn)
    for t in (4, 5, 6, 7, 8, 9):
        x = ember.randn(3, t)
        ember._dynamo.mark_dynamic(x, 1)
        assert ember.equal(fast(x), fn(x))
    assert _compiled(fast).specialisations == 2


def test_a_branch_on_a_size_sends_the_other_side_to_capture():
    def fn(x):
        if x.shape[1] > 12:
            return (x * 2).sin()
        return (x * 3).cos()
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(3, t),) for t in (4, 5, 6, 7, 9, 11, 12, 16, 13, 40)])
    c = _compiled(fast)
    assert c.specialisations == 3  # 9, 11, 12: the others were captured (13 on: the other branch)


def test_min_max_and_equality_are_guarded_too():
    def fn(x):
        n = min(x.shape[0], 6)
        return x[:n] * (2 if x.shape[0] == 9 else 3)
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(t, 4),) for t in (2, 3, 4, 5, 9, 6, 7, 8, 10)])


def test_split_by_a_size_is_not_fitted():
    # split(4) over a size makes one piece per 4: the captures at 9..12 (three pieces) look alike,
    # but 13 has four; the size is pinned, so every size is captured
    fn = lambda x: x.split(4, dim=1)[-1] * 2  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(2, t),) for t in (9, 10, 11, 12, 13, 14)])
    c = _compiled(fast)
    assert c.specialisations == 0 and c.captures == 6
    fn2 = lambda x: ember.stack(x.unbind(1)[:2]).sum(0)  # noqa: E731
    fast2 = ember.compile(fn2, dynamic=True)
    _run(fast2, fn2, [(ember.randn(2, t),) for t in (3, 4, 5, 6, 7, 8)])
    assert _compiled(fast2).specialisations == 0


def test_slices_keep_their_written_bounds():
    # slices are recorded as written (-3 stays -3, :-1 stays -1), and replayed at the new size
    fn = lambda x: x[:, 1:-1] * 2 + x[:, -3:].sum(1, keepdim=True)  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(2, t),) for t in (4, 5, 6, 7, 8, 12, 30)])
    assert _compiled(fast).specialisations == 3
    # x[:, :10] of shorter rows is cut back to their size: the result's size is t below 10 and 10
    # above, which no fit over the short ones can know; that size is pinned, each one captured
    cut = lambda x: x[:, :10] * 2  # noqa: E731
    fast = ember.compile(cut, dynamic=True)
    _run(fast, cut, [(ember.randn(2, t),) for t in (4, 5, 6, 7, 8, 9, 12, 30)])
    assert _compiled(fast).specialisations == 0
    diag = lambda x: x.diagonal() * 2  # noqa: E731  (min(3, t) long)
    fast = ember.compile(diag, dynamic=True)
    _run(fast, diag, [(ember.randn(3, t),) for t in (4, 5, 6, 7, 8, 2)])
    assert _compiled(fast).specialisations == 0
    square = lambda x: x.diagonal() * 2  # noqa: E731  (both sides one size: fitted)
    fast = ember.compile(square, dynamic=True)
    _run(fast, square, [(ember.randn(t, t),) for t in (4, 5, 6, 7, 8, 11)])
    assert _compiled(fast).specialisations == 2


def test_sizes_read_as_plain_numbers_are_pinned():
    halves = lambda x: x.reshape(x.shape[0], x.shape[1] // 2, 2).sum(-1)  # noqa: E731
    scaled = lambda x: x * (1.0 / x.shape[1])  # noqa: E731
    length = lambda x: x * len(x)  # noqa: E731
    as_int = lambda x: x.new_zeros(int(x.shape[0])) + x.sum(1)  # noqa: E731
    for fn in (halves, scaled, length, as_int):
        fast = ember.compile(fn, dynamic=True)
        sizes = (4, 6, 8, 10, 12, 14) if fn is halves else (4, 5, 6, 7, 8, 9)
        _run(fast, fn, [(ember.randn(t, t),) for t in sizes])
        assert _compiled(fast).specialisations == 0, fn


def test_sizes_as_numbers_in_arithmetic_are_fitted():
    fn = lambda x: (x * x.shape[1] + x.shape[0] * x.shape[1]).sum(0) + ember.arange(x.shape[1] * 2)[::2]  # noqa
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(3, t),) for t in (4, 5, 6, 7, 8, 11, 31)])
    assert _compiled(fast).specialisations == 3


def test_two_sizes_vary_independently():
    ember.manual_seed(1)
    w = ember.randn(8, 5)
    fn = lambda x: (x @ w).relu().reshape(x.shape[0] * x.shape[1], 5).sum(0)  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    pairs = [(2, 3), (3, 5), (4, 2), (2, 7), (5, 4), (3, 3), (6, 2), (4, 6), (7, 5), (2, 9), (9, 2), (5, 8), (6, 11)]
    _run(fast, fn, [(ember.randn(b, s, 8),) for b, s in pairs], _close)
    c = _compiled(fast)
    assert c.specialisations >= 3
    (group,) = c.groups.values()
    assert any(len(r.symbols) == 2 for r in group.regimes.values())


def test_sizes_equal_so_far_split_into_two_symbols_when_they_part():
    fn = lambda x, y: (x + y).exp() * x.shape[0]  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    # x's rows and y's columns move together, then apart
    inputs = [(ember.randn(t, 3, t), ember.randn(t, 3, t)) for t in (2, 3, 4, 5, 6)]
    inputs += [(ember.randn(a, 3, b), ember.randn(a, 3, b)) for a, b in [(2, 5), (3, 7), (4, 2), (6, 3), (5, 9),
                                                                         (7, 4), (2, 2), (8, 6), (3, 8), (9, 9)]]
    _run(fast, fn, inputs, _close)
    assert _compiled(fast).specialisations >= 1


def test_size_one_and_layouts_are_captured_not_fitted():
    fn = lambda x, b: (x + b).relu()  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    b = ember.randn(6)
    _run(fast, fn, [(ember.randn(t, 6), b) for t in (2, 3, 4, 5, 6)])
    c = _compiled(fast)
    assert c.specialisations == 1
    _run(fast, fn, [(ember.randn(1, 6), b)])  # size 1: a capture
    assert c.specialisations == 1
    # a view into a longer buffer (a KV cache): its row stride stays the buffer's
    buf = ember.randn(40, 8)
    _run(fast, fn, [(buf[:t, :6], b) for t in (2, 3, 4, 5, 9, 17)])
    _run(fast, fn, [(ember.randn(6, 12).t()[:, :6][:7], b)])  # a transposed one: another layout


def test_the_disk_cache_is_not_needed_and_fusion_survives_specialising():
    fn = lambda x: ((x * 2).sin() + 1).sqrt()  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.rand(3, t),) for t in (4, 5, 6, 7, 10)])
    c = _compiled(fast)
    assert c.specialisations == 1
    newest = next(reversed(c.cache.values()))
    assert newest.graph.fused_kernels == 1


def test_dynamic_false_captures_every_shape():
    fn = lambda x: (x * 2).sin()  # noqa: E731
    fast = ember.compile(fn, dynamic=False)
    _run(fast, fn, [(ember.randn(3, t),) for t in (4, 5, 6, 7, 8, 9)])
    c = _compiled(fast)
    assert c.captures == 6 and c.specialisations == 0 and not c.groups


def test_dynamic_none_turns_dynamic_when_sizes_change():
    # torch's automatic dynamic shapes: the first shape is captured statically, a second that
    # differs only in sizes switches fitting on (the four tracked captures from there: 5..8)
    fn = lambda x: (x * 2).sin()  # noqa: E731
    fast = ember.compile(fn)
    _run(fast, fn, [(ember.randn(3, 4),), (ember.randn(3, 4, dtype=ember.float64),)])
    assert not _compiled(fast).dynamic  # a dtype is no size
    _run(fast, fn, [(ember.randn(3, t),) for t in (5, 6, 7, 8, 9, 10)])
    c = _compiled(fast)
    assert c.dynamic and c.captures == 6 and c.specialisations == 2


def test_sizes_are_plain_ints_again_after_a_capture():
    fn = lambda x: x * x.shape[0]  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    fast(ember.randn(3, 2))
    assert type(ember.randn(2, 3).shape[0]) is int and type(ember.randn(2).size(0)) is int
    assert type(ember.randn(2, 3).numel()) is int and type(len(ember.randn(2, 3))) is int


def test_a_failing_capture_restores_the_accessors():
    def fn(x):
        raise ValueError("boom")
    fast = ember.compile(fn, dynamic=True)
    with pytest.raises(ValueError):
        fast(ember.randn(2))
    assert type(ember.randn(2, 3).shape[0]) is int


def test_gpt2_decoding_with_a_growing_kv_cache():
    """ember.models' GPT-2 with past_key_values: every step has a new cache length; after the
    first ones each step runs the fitted graph, with eager's logits."""
    from ember.models.gpt2 import GPT2Config, GPT2LMHeadModel
    ember.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=97, n_positions=64, n_embd=32, n_layer=2, n_head=4)).eval()
    fast = ember.compile(model, dynamic=True)
    ids = ember.randint(0, 97, (2, 5))
    with ember.no_grad():
        past_e = past_c = None
        for step in range(12):
            out_e = model(ids, past_key_values=past_e, use_cache=True)
            out_c = fast(ids, past_key_values=past_c, use_cache=True)
            assert ember.allclose(out_c.logits, out_e.logits, rtol=1e-4, atol=1e-5), step
            past_e, past_c = out_e.past_key_values, out_c.past_key_values
            ids = out_e.logits[:, -1:].argmax(-1)
    c = _compiled(fast)
    assert c.specialisations >= 5, (c.captures, c.specialisations)


class StaticCacheAttention(ember.nn.Module):
    """LLaMA's reference decoding: a preallocated KV cache (buffers) written at start_pos, an int."""

    def __init__(self, d=32, heads=4, max_len=64, batch=2):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.wq, self.wk, self.wv, self.wo = (ember.nn.Linear(d, d, bias=False) for _ in range(4))
        self.register_buffer("cache_k", ember.zeros(batch, max_len, heads, d // heads))
        self.register_buffer("cache_v", ember.zeros(batch, max_len, heads, d // heads))

    def forward(self, x, start_pos):
        b, t, _ = x.shape
        q, k, v = (w(x).view(b, t, self.heads, self.hd) for w in (self.wq, self.wk, self.wv))
        self.cache_k[:b, start_pos:start_pos + t] = k
        self.cache_v[:b, start_pos:start_pos + t] = v
        keys = self.cache_k[:b, :start_pos + t].transpose(1, 2)
        values = self.cache_v[:b, :start_pos + t].transpose(1, 2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), keys, values)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


def test_int_arguments_are_fitted_like_sizes():
    ember.manual_seed(0)
    eager, compiled = StaticCacheAttention(), StaticCacheAttention()
    compiled.load_state_dict(eager.state_dict())
    fast = ember.compile(compiled, dynamic=True)
    with ember.no_grad():
        prompt = ember.randn(2, 4, 32)
        assert _close(fast(prompt, 0), eager(prompt, 0))
        pos = 4
        for step in range(14):
            x = ember.randn(2, 1, 32)
            assert _close(fast(x, pos), eager(x, pos)), step
            assert ember.equal(compiled.cache_k, eager.cache_k) and ember.equal(compiled.cache_v, eager.cache_v)
            pos += 1
    c = _compiled(fast)
    assert c.specialisations >= 8, (c.captures, c.specialisations)
    regime = next(iter(next(iter(c.groups.values())).regimes.values()))
    assert regime.symbols == [[("int", 0)]]


def test_an_int_argument_in_a_branch_or_a_loop():
    def fn(x, n):
        for _ in range(n):  # a loop over an int: a graph per n
            x = x * 2
        return x
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(3), n) for n in (2, 3, 4, 5, 6, 7)])
    assert _compiled(fast).specialisations == 0

    def gated(x, n):
        return x * n if n < 6 else x - n
    fast = ember.compile(gated, dynamic=True)
    _run(fast, gated, [(ember.randn(3), n) for n in (2, 3, 4, 5, 6, 7, 8)])
    assert _compiled(fast).specialisations == 0  # 2..5 fit (one check), 6.. take the other side

    scaled = lambda x, n: x * n + n * n  # noqa: E731
    fast = ember.compile(scaled, dynamic=True)
    _run(fast, scaled, [(ember.randn(3), n) for n in (2, 3, 4, 5, 6, 9, 1, 0, -4)])
    assert _compiled(fast).specialisations == 2  # 6 and 9; 1, 0 and -4 are captured


def test_explain_reports_fitted_and_unfitted_sizes():
    fn = lambda x: (x * 2).sin()  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(3, t),) for t in (4, 5, 6, 7, 8)])
    text = str(ember.compiler.explain(fast, ember.randn(3, 9)))
    assert "Symbolic Sizes (2 calls ran a fitted graph)" in text and "s0 = input 0 dim 1" in text
    assert "new sizes: 2 renumbered the compiled graph, 0 compiled it anew" in text
    halves = lambda x: x.reshape(x.shape[0] // 2, 2).sum(-1)  # noqa: E731
    fast = ember.compile(halves, dynamic=True)
    _run(fast, halves, [(ember.randn(t),) for t in (4, 6, 8, 10, 12)])
    assert "not fitted: a size that varies was read as a plain number" in str(ember.compiler.explain(fast, ember.randn(14)))


def test_the_fitter_is_exact_and_refuses_what_is_not_a_polynomial():
    from ember._compile_dynamic import _Fitter, evaluate
    one = _Fitter([(s,) for s in (5, 6, 7, 9)])
    assert one.ready
    assert one.fit([12 * s * s + 3 * s - 7 for s in (5, 6, 7, 9)]) == {(2,): 12, (1,): 3, (0,): -7}
    assert one.fit([s // 2 for s in (5, 6, 7, 9)]) is None        # a floor: no integer polynomial
    assert one.fit([(s * s + s) // 2 for s in (5, 6, 7, 9)]) is None  # rational coefficients: refused
    assert one.fit([min(s, 7) for s in (5, 6, 7, 9)]) is None     # piecewise: the fourth point says no
    assert not _Fitter([(s,) for s in (5, 6, 7)]).ready          # as many points as coefficients: no check
    pts = [(2, 3), (3, 5), (4, 2), (2, 7), (5, 4), (3, 3), (6, 2)]
    two = _Fitter(pts)
    assert two.ready
    coefs = two.fit([b * s * 768 + 4 * s for b, s in pts])
    assert coefs == {(1, 1): 768, (0, 1): 4} and evaluate(coefs, (8, 100)) == 8 * 100 * 768 + 400
    assert not _Fitter([(2, 3), (2, 5), (2, 7), (2, 9), (2, 4), (2, 6), (2, 8)]).ready  # b never moved


def test_sizes_that_cannot_be_fitted_stop_capturing_at_the_limit():
    halves = lambda x: x.reshape(x.shape[0] // 2, 2).sum(-1)  # noqa: E731
    fast = ember.compile(halves, dynamic=True)
    with pytest.warns(UserWarning, match="cannot be made symbolic"):
        _run(fast, halves, [(ember.randn(t),) for t in range(4, 40, 2)])
    c = _compiled(fast)
    assert c.captures == ember._compile.cache_size_limit and c.eager_runs == 18 - c.captures


def test_fitted_graphs_under_autocast_and_in_training_mode():
    ember.manual_seed(0)
    m = Block().eval()
    fast = ember.compile(m, dynamic=True)
    with ember.no_grad(), ember.autocast("cpu", dtype=ember.bfloat16):
        for t in range(5, 14):
            x = ember.randn(2, t, 32)
            got, want = fast(x), m(x)
            assert got.dtype == want.dtype  # (the residual keeps float32)
            assert ember.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2), t
    assert _compiled(fast).specialisations >= 3
    m.train()  # (a training flag is a guard: its own group)
    for t in range(5, 12):
        x = ember.randn(2, t, 32)
        assert _close(fast(x), m(x)), t
    assert _compiled(fast).specialisations >= 6


def test_specialise_refuses_bad_sizes():
    fn = lambda x: (x * 2).sin()  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    _run(fast, fn, [(ember.randn(3, t),) for t in (4, 5, 6, 7)])
    (group,) = _compiled(fast).groups.values()
    (regime,) = group.regimes.values()
    with pytest.raises(ValueError, match="specialise\\(\\) takes 1 sizes, got 2"):
        regime.program.specialise([5, 6])
    with pytest.raises(ValueError, match="without dynamic dims"):
        regime.base.program.specialise([5])  # the raw capture has no symbols
