"""GPT-2 with Hugging Face's module and parameter names, so that `transformers` checkpoints load
as they are and ours load in `transformers`:

    model = GPT2LMHeadModel.from_pretrained("folder")    # config.json + model.safetensors / pytorch_model.bin
    out = model(input_ids, labels=input_ids)              # out.logits, out.loss
    ids = model.generate(input_ids, max_new_tokens=20, do_sample=True, top_k=50, top_p=0.95)
    model.save_pretrained("folder")                       # transformers.GPT2LMHeadModel reads it

The layers follow transformers' GPT-2: Conv1D projections (weight [in, out]), pre-norm blocks,
tanh-GELU ("gelu_new"), a causal mask that lets query i see keys up to its absolute position (so
the KV cache of generate() gives what recomputing everything gives), the LM head tied to the
token embedding.
"""
import json
import math
import os

import ember
import ember.nn as nn
import ember.nn.functional as F

__all__ = ["GPT2Config", "GPT2Model", "GPT2LMHeadModel", "CausalLMOutput", "tensor_parallel_plan",
           "GPT2PipelineStage"]

_ACTIVATIONS = {
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu": F.gelu,
    "relu": F.relu,
    "silu": F.silu,
}


class GPT2Config:
    """transformers.GPT2Config's fields and defaults (GPT-2 small)."""
    model_type = "gpt2"

    def __init__(self, vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, n_inner=None,
                 activation_function="gelu_new", resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1,
                 layer_norm_epsilon=1e-5, initializer_range=0.02, scale_attn_weights=True, use_cache=True,
                 bos_token_id=50256, eos_token_id=50256, tie_word_embeddings=True,
                 scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False, **kwargs):
        if activation_function not in _ACTIVATIONS:
            raise ValueError(f"GPT2Config: activation_function {activation_function!r} is not one of "
                             f"{sorted(_ACTIVATIONS)}")
        if n_embd % n_head:
            raise ValueError(f"GPT2Config: n_embd ({n_embd}) must be divisible by n_head ({n_head})")
        self.vocab_size, self.n_positions, self.n_embd, self.n_layer = vocab_size, n_positions, n_embd, n_layer
        self.n_head, self.n_inner, self.activation_function = n_head, n_inner, activation_function
        self.resid_pdrop, self.embd_pdrop, self.attn_pdrop = resid_pdrop, embd_pdrop, attn_pdrop
        self.layer_norm_epsilon, self.initializer_range = layer_norm_epsilon, initializer_range
        self.scale_attn_weights, self.use_cache = scale_attn_weights, use_cache
        self.bos_token_id, self.eos_token_id, self.tie_word_embeddings = bos_token_id, eos_token_id, tie_word_embeddings
        self.scale_attn_by_inverse_layer_idx = scale_attn_by_inverse_layer_idx
        self.use_checkpoint = bool(kwargs.pop("use_checkpoint", False))  # per-block gradient checkpointing
        self.reorder_and_upcast_attn = reorder_and_upcast_attn
        self.extra = kwargs  # other keys of a transformers config.json, kept for save_pretrained

    # transformers' aliases
    hidden_size = property(lambda self: self.n_embd)
    num_hidden_layers = property(lambda self: self.n_layer)
    num_attention_heads = property(lambda self: self.n_head)
    max_position_embeddings = property(lambda self: self.n_positions)

    def to_dict(self):
        d = {k: v for k, v in self.__dict__.items() if k != "extra"}
        d.update({k: v for k, v in self.extra.items() if k not in d})
        d["model_type"] = "gpt2"
        d.setdefault("architectures", ["GPT2LMHeadModel"])
        return d

    @classmethod
    def from_dict(cls, d):
        return cls(**{k: v for k, v in d.items() if k != "model_type"})

    @classmethod
    def from_pretrained(cls, folder):
        with open(os.path.join(folder, "config.json")) as f:
            d = json.load(f)
        if d.get("model_type", "gpt2") != "gpt2":
            raise ValueError(f"GPT2Config.from_pretrained: {folder} holds a {d.get('model_type')!r} model, not gpt2")
        return cls.from_dict(d)

    def save_pretrained(self, folder):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)

    def __repr__(self):
        return f"GPT2Config({json.dumps(self.to_dict(), sort_keys=True)})"


class CausalLMOutput:
    """The forward's result: .logits, .loss (with labels), .past_key_values (with use_cache)."""

    def __init__(self, logits, loss=None, past_key_values=None, hidden_states=None):
        self.logits, self.loss, self.past_key_values, self.hidden_states = logits, loss, past_key_values, hidden_states

    def to_tuple(self):
        return tuple(v for v in (self.loss, self.logits, self.past_key_values) if v is not None)

    def __getitem__(self, i):
        return self.to_tuple()[i]


class Conv1D(nn.Module):
    """transformers' Conv1D: a linear layer with its weight stored [in, out] (GPT-2's checkpoints)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(ember.empty(nx, nf))
        self.bias = nn.Parameter(ember.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        shape = x.shape[:-1] + (self.weight.shape[1],)  # nf, or this rank's columns under tensor parallelism
        return ember.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(shape)


class GPT2Attention(nn.Module):
    def __init__(self, config, layer_idx=0):
        super().__init__()
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.head_dim = self.n_embd // self.n_head
        self.scale = (1.0 / math.sqrt(self.head_dim)) if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            self.scale /= float(layer_idx + 1)
        self.c_attn = Conv1D(3 * self.n_embd, self.n_embd)
        self.c_proj = Conv1D(self.n_embd, self.n_embd)
        self.attn_pdrop = config.attn_pdrop
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def _heads(self, x):
        b, t, _ = x.shape
        return x.view(b, t, -1, self.head_dim).transpose(1, 2)

    def forward(self, x, layer_past=None, mask=None, use_cache=False):
        qkv = self.c_attn(x)
        width = qkv.shape[-1] // 3  # n_embd, or this rank's heads' share under tensor parallelism
        q, k, v = (self._heads(z) for z in qkv.split(width, dim=2))
        if layer_past is not None:
            k = ember.cat([layer_past[0], k], dim=-2)
            v = ember.cat([layer_past[1], v], dim=-2)
        present = (k, v) if use_cache else None
        dropout = self.attn_pdrop if self.training else 0.0
        if mask is None:  # no cache, no padding: the fused causal path
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True, scale=self.scale)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=self.scale)
        b, _, t, _ = y.shape
        y = y.transpose(1, 2).contiguous().view(b, t, width)
        return self.resid_dropout(self.c_proj(y)), present


class GPT2MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        inner = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        self.c_fc = Conv1D(inner, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, inner)
        self.act = _ACTIVATIONS[config.activation_function]
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, config, layer_idx=0):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(config)

    def forward(self, x, layer_past=None, mask=None, use_cache=False):
        a, present = self.attn(self.ln_1(x), layer_past, mask, use_cache)
        x = x + a
        return x + self.mlp(self.ln_2(x)), present


def tensor_parallel_plan(blocks="transformer.h.*"):
    """Megatron's layout of GPT-2's blocks for ember.distributed.tensor.parallel.parallelize_module:
    attention's fused qkv projection column-parallel by heads, its output projection row-parallel;
    the MLP's first layer column-parallel, its second row-parallel. Needs n_head divisible by the
    tensor-parallel group size."""
    from ..distributed.tensor.parallel import ColwiseParallel, RowwiseParallel
    return {f"{blocks}.attn.c_attn": ColwiseParallel(fused=3), f"{blocks}.attn.c_proj": RowwiseParallel(),
            f"{blocks}.mlp.c_fc": ColwiseParallel(), f"{blocks}.mlp.c_proj": RowwiseParallel()}


class GPT2PipelineStage(nn.Module):
    """Stage `stage_index` of a GPT2LMHeadModel cut into `num_stages` pipeline stages of
    consecutive blocks (ember.distributed.pipelining): the first also embeds token ids, the last
    also applies ln_f and lm_head (token ids -> hidden -> ... -> logits). It shares the model's
    modules, so the model's names and state dict stay valid for the parameters it holds.

    Tied embeddings (GPT-2's default) live on two stages: the first stage's wte and the last
    stage's lm_head start equal (every rank builds the same model) and stay equal because
    sync_tied_gradients(), called after each schedule step and before the optimizer step, sums
    their gradients between the two ranks (Megatron's embedding group). Every rank must
    construct its stage (the group is created collectively)."""

    def __init__(self, model, stage_index, num_stages, group=None):
        super().__init__()
        cfg, n = model.config, model.config.n_layer
        if not 1 <= num_stages <= n:
            raise ValueError(f"GPT2PipelineStage: cannot cut {n} blocks into {num_stages} stages")
        t = model.transformer
        lo, hi = n * stage_index // num_stages, n * (stage_index + 1) // num_stages
        self.first, self.last = stage_index == 0, stage_index == num_stages - 1
        if self.first:
            self.wte, self.wpe, self.drop = t.wte, t.wpe, t.drop
        self.h = nn.ModuleList([t.h[i] for i in range(lo, hi)])
        if self.last:
            self.ln_f, self.lm_head = t.ln_f, model.lm_head
        self._tied_group = None
        if cfg.tie_word_embeddings and num_stages > 1:
            from .. import distributed as dist
            ranks = dist.get_process_group_ranks(group) if group is not None else list(range(dist.get_world_size()))
            tied = dist.new_group([ranks[0], ranks[num_stages - 1]])
            if self.last:  # its own copy of the shared matrix (the first stage keeps wte's)
                self.lm_head.weight = nn.Parameter(t.wte.weight.detach().clone())
            if self.first or self.last:
                self._tied_group = tied

    def tied_weight(self):
        return self.wte.weight if self.first else self.lm_head.weight

    def sync_tied_gradients(self):
        """Sums the tied embedding's gradient over its two stages (no-op elsewhere or untied)."""
        if self._tied_group is None:
            return
        from .. import distributed as dist
        w = self.tied_weight()
        if w.grad is None:
            w.grad = ember.zeros_like(w)
        dist.all_reduce(w.grad, group=self._tied_group)

    def forward(self, x):
        if self.first:
            pos = ember.arange(x.shape[1], device=x.device).unsqueeze(0)
            x = self.drop(self.wte(x) + self.wpe(pos))
        for block in self.h:
            x = block(x)[0]
        if self.last:
            x = self.lm_head(self.ln_f(x))
        return x


class GPT2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(config, i) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.gradient_checkpointing = bool(getattr(config, "use_checkpoint", False))

    def forward(self, input_ids, past_key_values=None, attention_mask=None, position_ids=None, use_cache=False):
        if input_ids.dim() == 1:
            input_ids = input_ids.unsqueeze(0)
        b, t = input_ids.shape
        past = 0 if past_key_values is None else past_key_values[0][0].shape[-2]
        if past + t > self.config.n_positions:
            raise ValueError(f"GPT2Model: {past + t} positions exceed n_positions = {self.config.n_positions}")
        if position_ids is None:
            if attention_mask is not None:  # left padding: positions count the real tokens
                position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, past:past + t]
            else:
                position_ids = ember.arange(past, past + t, device=input_ids.device).unsqueeze(0)
        mask = None
        if past > 0 or attention_mask is not None:
            # query i (absolute position past + i) sees keys j <= past + i, and only real tokens
            rows = ember.arange(past, past + t, device=input_ids.device).unsqueeze(1)
            cols = ember.arange(past + t, device=input_ids.device).unsqueeze(0)
            mask = (cols <= rows).unsqueeze(0).unsqueeze(0)
            if attention_mask is not None:
                mask = mask & attention_mask.bool()[:, None, None, :past + t]
                # a padded query row sees nothing: let it see itself so softmax stays finite
                mask = mask | ember.eye(past + t, dtype=ember.bool, device=input_ids.device)[past:past + t].unsqueeze(0).unsqueeze(0)
        x = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        presents = [] if use_cache else None
        checkpointed = self.gradient_checkpointing and self.training and not use_cache and ember.is_grad_enabled()
        for i, block in enumerate(self.h):
            if checkpointed:  # keep only each block's input; recompute the inside during backward
                from ..utils.checkpoint import checkpoint
                x = checkpoint(lambda h, b=block: b(h, None, mask, False)[0], x, use_reentrant=False)
                present = None
            else:
                x, present = block(x, None if past_key_values is None else past_key_values[i], mask, use_cache)
            if use_cache:
                presents.append(present)
        return self.ln_f(x), (tuple(presents) if use_cache else None)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self._init_weights()
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def _init_weights(self):
        """transformers' GPT-2 initialisation: N(0, 0.02), residual projections scaled by
        1/sqrt(2 n_layer), zero biases, unit LayerNorms."""
        std = self.config.initializer_range
        for name, module in self.named_modules():
            if isinstance(module, (nn.Linear, nn.Embedding, Conv1D)):
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * self.config.n_layer))

    def forward(self, input_ids, past_key_values=None, attention_mask=None, position_ids=None, labels=None,
                use_cache=False):
        hidden, presents = self.transformer(input_ids, past_key_values, attention_mask, position_ids, use_cache)
        logits = self.lm_head(hidden)
        loss = None
        if labels is not None:  # next-token prediction: logits at t predict labels at t + 1
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = F.cross_entropy(shift_logits.view(-1, shift_logits.shape[-1]), shift_labels.view(-1),
                                   ignore_index=-100)
        return CausalLMOutput(logits, loss, presents, hidden)

    def gradient_checkpointing_enable(self):
        """Recompute each block during backward instead of keeping its activations (transformers' name)."""
        self.transformer.gradient_checkpointing = True

    def gradient_checkpointing_disable(self):
        self.transformer.gradient_checkpointing = False

    # ------------------------------------------------------------------ files
    @classmethod
    def from_pretrained(cls, folder, device=None, dtype=None):
        """Loads a transformers folder: config.json plus model.safetensors or pytorch_model.bin."""
        config = GPT2Config.from_pretrained(folder)
        # Built on the meta device and given uninitialised memory: every parameter is then loaded,
        # so the random initialisation (2.3 s for the 124M model on this CPU) would be thrown away.
        with ember.device("meta"):
            model = cls(config)
        model.to_empty(device="cpu")
        st = os.path.join(folder, "model.safetensors")
        if os.path.exists(st):
            from ..safetensors import load_file
            state = load_file(st)
        elif os.path.exists(os.path.join(folder, "pytorch_model.bin")):
            state = ember.load(os.path.join(folder, "pytorch_model.bin"), map_location="cpu", weights_only=True)
        else:
            raise FileNotFoundError(f"GPT2LMHeadModel.from_pretrained: no model.safetensors or pytorch_model.bin in "
                                    f"{folder}")
        model.load_hf_state_dict(state, assign=True)  # the loaded tensors are ours: no copy
        if dtype is not None or device is not None:
            model = model.to(device=device, dtype=dtype)
        return model.eval()  # as transformers: ready for inference; .train() to fine-tune

    def load_hf_state_dict(self, state, assign=False):
        """Takes a transformers GPT-2 state dict (with or without the "transformer." prefix; the
        attention-mask buffers of old checkpoints and a tied lm_head are ignored). assign=True makes
        each tensor of the parameter's dtype and device the parameter's memory (no copy; the caller
        must not reuse the tensors), as load_state_dict(assign=True)."""
        fixed = {}
        for k, v in state.items():
            if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
                continue
            if not k.startswith("transformer.") and not k.startswith("lm_head."):
                k = "transformer." + k
            fixed[k] = v
        if self.config.tie_word_embeddings:
            fixed.pop("lm_head.weight", None)
        own = dict(self.state_dict(keep_vars=True))  # the Parameters themselves: assign re-points them
        if self.config.tie_word_embeddings:
            own.pop("lm_head.weight", None)
        missing = sorted(set(own) - set(fixed))
        unexpected = sorted(set(fixed) - set(own))
        if missing or unexpected:
            raise RuntimeError(f"GPT2LMHeadModel: the checkpoint does not fit this config: missing {missing[:8]}, "
                               f"unexpected {unexpected[:8]}")
        with ember.no_grad():
            for k, v in fixed.items():
                if tuple(own[k].shape) != tuple(v.shape):
                    raise RuntimeError(f"GPT2LMHeadModel: {k} has shape {tuple(v.shape)} in the checkpoint, "
                                       f"{tuple(own[k].shape)} here")
                if assign and v.dtype == own[k].dtype and v.device == own[k].device and v.is_contiguous():
                    own[k].data = v  # the checkpoint's memory, no copy (a tied head follows: one Parameter)
                else:
                    own[k].copy_(v)

    def save_pretrained(self, folder):
        """config.json + model.safetensors (the tied lm_head left out, as transformers does)."""
        from ..safetensors import save_file
        self.config.save_pretrained(folder)
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        if self.config.tie_word_embeddings:
            state.pop("lm_head.weight", None)
        save_file(state, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})

    # ------------------------------------------------------------------ generation
    @ember.no_grad()
    def generate(self, input_ids, max_new_tokens=20, do_sample=False, temperature=1.0, top_k=None, top_p=None,
                 eos_token_id=None, attention_mask=None, pad_token_id=None, generator=None):
        """Continues each prompt by max_new_tokens tokens with a KV cache (prompts of different
        lengths: left-pad them and pass attention_mask). Greedy, or sampling with temperature,
        top-k and top-p. Sequences that emitted eos_token_id are padded with pad_token_id
        (default: eos) until all are done. Past n_positions tokens, the last n_positions are
        recomputed per step (a sliding window)."""
        if input_ids.dim() == 1:
            input_ids = input_ids.unsqueeze(0)
        if eos_token_id is not None and pad_token_id is None:
            pad_token_id = eos_token_id
        ids = input_ids
        mask = attention_mask
        finished = ember.zeros(ids.shape[0], dtype=ember.bool, device=ids.device)
        out = self(ids, attention_mask=mask, use_cache=True)
        past = out.past_key_values
        logits = out.logits[:, -1, :]
        for step in range(max_new_tokens):
            next_token = _pick(logits, do_sample, temperature, top_k, top_p, generator)
            if eos_token_id is not None:
                next_token = ember.where(finished, ember.full_like(next_token, pad_token_id), next_token)
                finished = finished | (next_token == eos_token_id)
            ids = ember.cat([ids, next_token.unsqueeze(1)], dim=1)
            if mask is not None:
                mask = ember.cat([mask, ember.ones(mask.shape[0], 1, dtype=mask.dtype, device=mask.device)], dim=1)
            if step + 1 == max_new_tokens or (eos_token_id is not None and bool(finished.all())):
                break
            if ids.shape[1] > self.config.n_positions:
                # past the context: a sliding window of the last n_positions tokens, recomputed
                # (absolute positions restart at its start, as nanoGPT's sampling does)
                window = self.config.n_positions
                out = self(ids[:, -window:], attention_mask=None if mask is None else mask[:, -window:],
                           use_cache=False)
            else:
                out = self(next_token.unsqueeze(1), past_key_values=past, attention_mask=mask, use_cache=True)
                past = out.past_key_values
            logits = out.logits[:, -1, :]
        return ids


def _pick(logits, do_sample, temperature, top_k, top_p, generator):
    if not do_sample:
        return logits.argmax(-1)
    logits = logits / max(temperature, 1e-8)
    if top_k is not None and top_k > 0:
        kth = ember.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = ember.sort(logits, dim=-1, descending=True)
        cum = sorted_logits.softmax(-1).cumsum(-1)
        drop = cum - sorted_logits.softmax(-1) > top_p  # keep the smallest prefix reaching top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = ember.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    probs = logits.softmax(-1)
    return ember.multinomial(probs, 1, generator=generator).squeeze(-1)
