"""nn.utils.prune against torch: masks (l1, ln-structured, iterative through PruningContainer,
global, random with torch's draws), state_dict keys, outputs and gradients, remove, errors."""
import importlib

import numpy as np

import ember


def run(T):
    prune = importlib.import_module(T.__name__ + ".nn.utils.prune")
    rng = np.random.RandomState(0)

    def mk():
        m = T.nn.Linear(6, 4)
        with T.no_grad():
            m.weight.copy_(T.tensor(rng.randn(4, 6).astype(np.float32)))
            m.bias.copy_(T.tensor(rng.randn(4).astype(np.float32)))
        return m
    out = []
    m = mk()
    prune.l1_unstructured(m, "weight", amount=0.3)
    out += [sorted(m.state_dict()), m.weight_mask.tolist()]
    prune.l1_unstructured(m, "weight", amount=3)  # acts on the 17 entries still unpruned
    out.append(m.weight_mask.tolist())
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    out.append(m.weight_mask.tolist())
    x = T.tensor(rng.randn(3, 6).astype(np.float32))
    out.append(np.round(np.asarray(m(x).tolist()), 5).tolist())
    m(x).sum().backward()
    out += [np.round(np.asarray(m.weight_orig.grad.tolist()), 5).tolist(), prune.is_pruned(m)]
    prune.remove(m, "weight")
    out += [sorted(m.state_dict()), np.round(np.asarray(m.weight.tolist()), 5).tolist(), prune.is_pruned(m)]
    a, b = mk(), mk()
    prune.global_unstructured([(a, "weight"), (b, "weight"), (a, "bias")], pruning_method=prune.L1Unstructured,
                              amount=0.4)
    out += [a.weight_mask.tolist(), b.weight_mask.tolist(), a.bias_mask.tolist()]
    T.manual_seed(5)
    c = mk()
    prune.random_unstructured(c, "weight", amount=0.5)
    out.append(c.weight_mask.tolist())
    prune.random_structured(c, "weight", amount=2, dim=1)
    out.append(c.weight_mask.tolist())
    for bad in (lambda: prune.l1_unstructured(mk(), "weight", amount=1.5),
                lambda: prune.l1_unstructured(mk(), "weight", amount=30),
                lambda: prune.remove(mk(), "weight")):
        try:
            bad()
            out.append("no error")
        except (ValueError, TypeError) as e:
            out.append(str(e).split(" of module")[0])
    return out


def test_matches_torch(torch_ref):
    for e, t in zip(run(ember), run(torch_ref)):
        assert e == t


def test_prunes_the_requested_amount():
    m = ember.nn.Conv2d(4, 8, 3)
    ember.nn.utils.prune.l1_unstructured(m, "weight", amount=0.25)
    assert int((m.weight_mask == 0).sum()) == round(0.25 * m.weight.numel())
    assert bool((m.weight == m.weight_orig * m.weight_mask).all())
    ember.nn.utils.prune.ln_structured(m, "weight", amount=0.5, n=1, dim=0)
    per_filter = (m.weight_mask.reshape(8, -1) != 0).any(1)
    assert int(per_filter.sum()) == 4
