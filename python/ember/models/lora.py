"""LoRA (low-rank adaptation): frozen base weights W plus a trained update (alpha / r) B A with
A [r, in] and B [out, r]; B starts at zero, so the adapted model starts as the base model.

    inject_lora(model, ["c_attn", "c_proj"], r=8, alpha=16)   # wraps matching Linear / Conv1D
    ... train (only the adapters require gradients) ...
    save_lora(model, "adapter.safetensors")                  # the adapter weights alone
    load_lora(model, "adapter.safetensors")
    merge_lora(model)                                        # W += (alpha / r) B A, for inference
    unmerge_lora(model)

Names and initialisation follow PEFT's (lora_A: Kaiming-uniform, lora_B: zeros; parameters
"<layer>.lora_A.weight", "<layer>.lora_B.weight").
"""
import math
import re

import ember
import ember.nn as nn

from .gpt2 import Conv1D

__all__ = ["LoRALayer", "inject_lora", "lora_state_dict", "save_lora", "load_lora", "merge_lora", "unmerge_lora",
           "mark_only_lora_as_trainable"]


class LoRALayer(nn.Module):
    """A Linear (weight [out, in]) or a GPT-2 Conv1D (weight [in, out]) with a LoRA update."""

    def __init__(self, base, r=8, alpha=16, dropout=0.0):
        super().__init__()
        if not isinstance(base, (nn.Linear, Conv1D)):
            raise TypeError(f"LoRA: expected a Linear or Conv1D layer, got {type(base).__name__}")
        if r <= 0:
            raise ValueError(f"LoRA: rank r must be positive, got {r}")
        self.base = base
        self.transposed = isinstance(base, Conv1D)  # Conv1D keeps [in, out]
        w = base.weight
        out_features, in_features = (w.shape[1], w.shape[0]) if self.transposed else (w.shape[0], w.shape[1])
        self.r, self.alpha, self.scaling = r, alpha, alpha / r
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.lora_A.to(device=w.device, dtype=w.dtype)
        self.lora_B.to(device=w.device, dtype=w.dtype)
        self.lora_dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.merged = False

    def delta_weight(self):
        d = (self.lora_B.weight @ self.lora_A.weight) * self.scaling  # [out, in]
        return d.t() if self.transposed else d

    def forward(self, x):
        y = self.base(x)
        if self.merged:
            return y
        return y + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling

    @ember.no_grad()
    def merge(self):
        if not self.merged:
            self.base.weight.add_(self.delta_weight())
            self.merged = True

    @ember.no_grad()
    def unmerge(self):
        if self.merged:
            self.base.weight.sub_(self.delta_weight())
            self.merged = False


def _matches(name, patterns):
    last = name.rsplit(".", 1)[-1]
    return any(last == p or re.fullmatch(p, name) for p in patterns)


def inject_lora(model, target_modules, r=8, alpha=16, dropout=0.0):
    """Wraps every Linear/Conv1D whose name (last part, or the whole dotted name as a regular
    expression) is in target_modules, then freezes everything but the adapters. Returns the
    wrapped names."""
    if isinstance(target_modules, str):
        target_modules = [target_modules]
    wrapped = []
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if isinstance(child, (nn.Linear, Conv1D)) and _matches(full, target_modules):
                setattr(module, child_name, LoRALayer(child, r, alpha, dropout))
                wrapped.append(full)
    if not wrapped:
        raise ValueError(f"inject_lora: no Linear or Conv1D layer matches {list(target_modules)}")
    mark_only_lora_as_trainable(model)
    return wrapped


def mark_only_lora_as_trainable(model):
    for name, p in model.named_parameters():
        p.requires_grad_("lora_A" in name or "lora_B" in name)


def lora_state_dict(model):
    return {k: v for k, v in model.state_dict().items() if "lora_A" in k or "lora_B" in k}


def save_lora(model, path, metadata=None):
    """The adapter weights alone, as safetensors (what PEFT calls adapter_model.safetensors)."""
    from ..safetensors import save_file
    state = {k: v.detach().cpu().contiguous() for k, v in lora_state_dict(model).items()}
    meta = {"format": "pt"}
    meta.update(metadata or {})
    save_file(state, path, metadata=meta)


def load_lora(model, path):
    """Loads adapter weights saved by save_lora into a model with the same adapters injected."""
    from ..safetensors import load_file
    state = load_file(path)
    own = lora_state_dict(model)
    missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    if missing or unexpected:
        raise RuntimeError(f"load_lora: the adapters do not fit this model: missing {missing[:6]}, "
                           f"unexpected {unexpected[:6]}")
    with ember.no_grad():
        for k, v in state.items():
            own[k].copy_(v)


def merge_lora(model):
    for m in model.modules():
        if isinstance(m, LoRALayer):
            m.merge()


def unmerge_lora(model):
    for m in model.modules():
        if isinstance(m, LoRALayer):
            m.unmerge()
