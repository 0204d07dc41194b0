"""LoRA on GPT-2 (Conv1D projections) and on Linear layers, and per-block gradient
checkpointing: checked against the plain computations."""
import pytest

import ember
from ember.models import (GPT2Config, GPT2LMHeadModel, inject_lora, load_lora, lora_state_dict, merge_lora,
                          save_lora, unmerge_lora)

CONFIG = dict(n_layer=2, n_embd=32, n_head=4, vocab_size=50, n_positions=16, resid_pdrop=0.0, embd_pdrop=0.0,
              attn_pdrop=0.0)


def model(seed=0, **extra):
    ember.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(**CONFIG, **extra))


def test_lora_starts_as_the_base_trains_only_adapters_and_merges(tmp_path):
    m = model()
    x = ember.randint(0, 50, (2, 12))
    base_logits = m(x).logits.detach()
    wrapped = inject_lora(m, ["c_attn", "c_proj"], r=4, alpha=8)
    assert len(wrapped) == 6  # c_attn, attn.c_proj, mlp.c_proj per block
    assert ember.allclose(m(x).logits, base_logits, atol=1e-6)  # B = 0: the base model
    trainable = [n for n, p in m.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    frozen = {n: p.detach().clone() for n, p in m.named_parameters() if not p.requires_grad}
    opt = ember.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-2)
    first = None
    for _ in range(15):
        opt.zero_grad()
        loss = m(x, labels=x).loss
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < first
    for n, p in m.named_parameters():
        if n in frozen:
            assert ember.equal(p, frozen[n]), n
    adapted = m(x).logits.detach()
    merge_lora(m)
    assert ember.allclose(m(x).logits, adapted, atol=1e-5)
    unmerge_lora(m)
    assert ember.allclose(m(x).logits, adapted, atol=1e-5)
    # the adapters alone, saved and loaded into a fresh injected model
    save_lora(m, str(tmp_path / "adapter.safetensors"))
    other = model()
    inject_lora(other, ["c_attn", "c_proj"], r=4, alpha=8)
    load_lora(other, str(tmp_path / "adapter.safetensors"))
    assert ember.allclose(other(x).logits, adapted, atol=1e-6)
    assert set(lora_state_dict(other)) == set(lora_state_dict(m))


def test_lora_on_linear_layers_and_bad_targets():
    net = ember.nn.Sequential(ember.nn.Linear(6, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))
    inject_lora(net, [r"0|2"], r=2, alpha=4)
    x = ember.randn(5, 6)
    net(x).sum().backward()
    assert net[0].lora_B.weight.grad is not None and net[0].base.weight.grad is None
    with pytest.raises(ValueError, match="no Linear or Conv1D layer matches"):
        inject_lora(model(), ["q_proj"])


def test_gradient_checkpointing_gives_the_same_gradients():
    plain, ckpt = model(5), model(5, use_checkpoint=True)
    assert ckpt.transformer.gradient_checkpointing
    x = ember.randint(0, 50, (2, 12))
    for m in (plain, ckpt):
        m.train()
        m(x, labels=x).loss.backward()
    for (n, p), (_, q) in zip(plain.named_parameters(), ckpt.named_parameters()):
        assert ember.allclose(p.grad, q.grad, atol=1e-6), n
