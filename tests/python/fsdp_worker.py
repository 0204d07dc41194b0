"""One worker of tests/python/test_fsdp.py's jobs, started by ember-run: FSDP, DeviceMesh/DTensor
and distributed checkpoints checked against single-process training of the same GPT-2 style
model. Prints "OK <rank>" when every check held."""
import functools
import os
import sys

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict
from ember.distributed.device_mesh import init_device_mesh
from ember.distributed.fsdp import (CPUOffload, FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy,
                                    StateDictType)
from ember.distributed.fsdp.wrap import size_based_auto_wrap_policy, transformer_auto_wrap_policy
from ember.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor
from ember.models.gpt2 import GPT2Block, GPT2Config, GPT2LMHeadModel

BATCH, SEQ = 4, 16  # per rank


def make_model():
    ember.manual_seed(0)
    cfg = GPT2Config(vocab_size=67, n_positions=32, n_embd=32, n_layer=3, n_head=4, resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0)
    return GPT2LMHeadModel(cfg)


def global_batch(step, world):
    g = ember.Generator().manual_seed(100 + step)
    return ember.randint(0, 67, (BATCH * world, SEQ), generator=g)


def local_batch(step, rank, world):
    return global_batch(step, world)[rank * BATCH:(rank + 1) * BATCH]


def train(model, opt, ids, clip=None):
    opt.zero_grad()
    loss = model(ids, labels=ids).loss
    loss.backward()
    norm = None
    if clip is not None:
        norm = model.clip_grad_norm_(clip) if isinstance(model, FSDP) else ember.nn.utils.clip_grad_norm_(
            model.parameters(), clip)
    opt.step()
    return loss, norm


def reference(steps, world, clip=None):
    """Single-process training on the whole global batch."""
    model = make_model()
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    norms = []
    for s in range(steps):
        norms.append(train(model, opt, global_batch(s, world), clip)[1])
    return model, norms


def max_diff(a, b):
    assert list(a.keys()) == list(b.keys()), (list(a)[:5], list(b)[:5])
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)


def wrap(model, **kw):
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={GPT2Block})
    return FSDP(model, auto_wrap_policy=policy, **kw)


def check_training(rank, world):
    steps = 3
    ref, ref_norms = reference(steps, world, clip=0.5)
    ref_sd = ref.state_dict()
    for strategy, extra in ((ShardingStrategy.FULL_SHARD, {}), (ShardingStrategy.FULL_SHARD, {"forward_prefetch": True}),
                            (ShardingStrategy.FULL_SHARD, {"cpu_offload": CPUOffload(offload_params=True)}),
                            (ShardingStrategy.SHARD_GRAD_OP, {}), (ShardingStrategy.NO_SHARD, {})):
        model = wrap(make_model(), sharding_strategy=strategy, **extra)
        units = FSDP.fsdp_modules(model)
        assert len(units) == 4, units  # the root and one per block
        if strategy != ShardingStrategy.NO_SHARD:
            total = sum(u._flat_param.numel() for u in units)
            whole = sum(p.numel() for p in ref.parameters())
            assert total <= whole // world + 4 * world, (total, whole)  # this rank holds 1/world (+ padding)
        opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
        for s in range(steps):
            _, norm = train(model, opt, local_batch(s, rank, world), clip=0.5)
            assert abs(norm.item() - ref_norms[s].item()) < 1e-4 * max(1.0, ref_norms[s].item()), (norm, ref_norms[s])
        sd = model.state_dict()
        d = max_diff(sd, ref_sd)
        assert d < 2e-5, (strategy, extra, d)
        # the modules' own attributes are whole again inside summon_full_params
        with FSDP.summon_full_params(model):
            w = model.transformer.h[1].mlp.c_fc.weight
            assert (w - ref_sd["transformer.h.1.mlp.c_fc.weight"]).abs().max().item() < 2e-5
    # bf16 parameters and gradient reduction: close to the float32 run
    model = wrap(make_model(), mixed_precision=MixedPrecision(param_dtype=ember.bfloat16, reduce_dtype=ember.bfloat16))
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    for s in range(steps):
        loss, _ = train(model, opt, local_batch(s, rank, world))
        assert loss.dtype == ember.float32 or loss.dtype == ember.bfloat16
    sd = model.state_dict()
    assert sd["lm_head.weight"].dtype == ember.float32  # the shards stay float32
    assert max_diff(sd, ref_sd) < 0.1
    # a size-based policy and the error for a parameter read after its unit freed it
    model = FSDP(make_model(), auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=2000))
    assert len(FSDP.fsdp_modules(model)) > 1
    out = model(local_batch(0, rank, world), labels=local_batch(0, rank, world))
    try:
        model.transformer.h[0].mlp.c_fc.weight.sum()
        raise AssertionError("reading a freed parameter view did not raise")
    except RuntimeError as e:
        assert "storage has been freed" in str(e), e
    out.loss.backward()


def check_meta_init(rank, world):
    """A model built on the meta device: FSDP materialises each unit before sharding it, with
    param_init_fn (here: the values single-process training starts from, so training must match
    it) or, without one, to_empty + reset_parameters, made equal across ranks by sync_module_states."""
    steps = 2
    ref_sd = reference(steps, world)[0].state_dict()
    start = make_model().state_dict()
    with ember.device("meta"):
        meta_model = make_model()
    names = {m: prefix for prefix, m in meta_model.named_modules()}
    calls = []

    def init_from_start(m):
        calls.append(m)
        prefix = names[m] + "." if names[m] else ""
        m.to_empty(device="cpu", recurse=False)
        for n, t in list(m._parameters.items()) + list(m._buffers.items()):
            if t is not None:
                t.copy_(start[prefix + n])

    model = wrap(meta_model, param_init_fn=init_from_start)
    assert len(calls) == len(names), (len(calls), len(names))  # every module, once
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    for s in range(steps):
        train(model, opt, local_batch(s, rank, world))
    assert max_diff(model.state_dict(), ref_sd) < 2e-5
    # reset_parameters after to_empty; each rank draws other numbers until rank 0's are broadcast
    with ember.device("meta"):
        seq = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.LayerNorm(16), ember.nn.Linear(16, 4))
    ember.manual_seed(1000 + rank)
    model = FSDP(seq, auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=100),
                 sync_module_states=True)
    assert len(FSDP.fsdp_modules(model)) > 1
    sd = model.state_dict()
    assert not any(t.is_meta for t in sd.values())
    assert ember.equal(sd["1.weight"], ember.ones(16)) and ember.equal(sd["1.bias"], ember.zeros(16))
    assert 0 < sd["0.weight"].abs().max().item() <= 8 ** -0.5  # Linear's kaiming-uniform bound
    flat = ember.cat([v.reshape(-1) for v in sd.values()])
    rank0 = flat.clone()
    dist.broadcast(rank0, 0)
    assert ember.equal(flat, rank0)
    class NoReset(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = ember.nn.Parameter(ember.empty(3))

    with ember.device("meta"):
        no_reset = NoReset()
    try:
        FSDP(no_reset)
        raise AssertionError("a meta module without reset_parameters did not raise")
    except RuntimeError as e:
        assert "reset_parameters" in str(e), e


def check_mesh_and_dtensor(rank, world):
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
    assert mesh.size() == world and mesh.get_local_rank() == rank
    full = ember.arange(35.0).reshape(7, 5)
    d = distribute_tensor(full, mesh, [Shard(0)])
    assert tuple(d.shape) == (7, 5) and ember.equal(d.to_local(), full.chunk(world, 0)[rank])
    assert ember.equal(d.full_tensor(), full)
    r = d.redistribute(mesh, [Shard(1)])
    assert ember.equal(r.full_tensor(), full)
    if world == 4:
        mesh2 = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        assert mesh2["tp"].size() == 2 and mesh2.get_coordinate() == [rank // 2, rank % 2]
        d2 = distribute_tensor(full, mesh2, [Shard(0), Shard(1)])
        assert ember.equal(d2.full_tensor(), full)
        r2 = d2.redistribute(mesh2, [Replicate(), Shard(0)])
        assert ember.equal(r2.to_local(), full.chunk(2, 0)[rank % 2])
        # a 2-d layout saved, loaded as another
        path = os.environ["EMBER_TEST_DIR"] + "/mesh2d"
        dcp.save({"w": d2, "n": 3}, checkpoint_id=path)
        target = {"w": DTensor._from_full(ember.zeros(7, 5), mesh, [Shard(1)]), "n": 0}
        dcp.load(target, checkpoint_id=path)
        assert target["n"] == 3 and ember.equal(target["w"].full_tensor(), full)


def fsdp_state(model, opt):
    return get_state_dict(model, opt)


def check_checkpoint_save(rank, world):
    """Train 2 steps at this world size, save a sharded checkpoint, then take step 3 and record
    the result (rank 0 writes it as the reference the loading jobs must reproduce)."""
    root = os.environ["EMBER_TEST_DIR"]
    model = wrap(make_model())
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    for s in range(2):
        train(model, opt, local_batch(s, rank, world))
    msd, osd = fsdp_state(model, opt)
    assert isinstance(msd["lm_head.weight"], DTensor) and msd["lm_head.weight"].placements == (Shard(0),)
    dcp.save({"model": msd, "optim": osd, "step": 2}, checkpoint_id=root + "/ckpt")
    train(model, opt, local_batch(2, rank, world))
    full = model.state_dict()
    if rank == 0:
        ember.save(full, root + "/after3.pt")
    # a second save over the first, killed at the commit point (rank 0 dies instead of renaming
    # .metadata) or while writing (rank 1 dies right after writing its pieces)
    crash = os.environ.get("EMBER_TEST_CRASH")
    if crash:
        import ember.distributed.checkpoint as mod
        if crash == "commit":
            real = mod.os.replace

            def die_at_commit(src, dst):
                if dst.endswith(".metadata"):
                    os._exit(17)
                return real(src, dst)
            mod.os.replace = die_at_commit
        elif rank == 1:
            real_save = mod.safetensors.save_file

            def die_after_writing(tensors, filename, metadata=None):
                real_save(tensors, filename, metadata)
                os._exit(17)
            mod.safetensors.save_file = die_after_writing
        msd, osd = fsdp_state(model, opt)
        dcp.save({"model": msd, "optim": osd, "step": 3}, checkpoint_id=root + "/ckpt")


def check_checkpoint_load(rank, world):
    """Load the checkpoint another world size saved, take step 3 on the same global batch, and
    match what that job computed."""
    root = os.environ["EMBER_TEST_DIR"]
    model = wrap(make_model())
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    train(model, opt, local_batch(0, rank, world))  # optimizer state exists before it is overwritten
    msd, osd = fsdp_state(model, opt)
    state = {"model": msd, "optim": osd, "step": 0}
    dcp.load(state, checkpoint_id=root + "/ckpt")
    assert state["step"] == 2
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    saved_world = int(os.environ["EMBER_TEST_SAVED_WORLD"])
    per = BATCH * saved_world // world  # the same global batch of step 3, cut for this world size
    train(model, opt, global_batch(2, saved_world)[rank * per:(rank + 1) * per])
    want = ember.load(root + "/after3.pt")
    got = model.state_dict()
    assert max_diff(got, want) < 2e-5, max_diff(got, want)
    # the same through full (unsharded) state dicts into a plain model
    full_msd, full_osd = get_state_dict(model, opt, options=StateDictOptions(full_state_dict=True))
    assert not isinstance(full_msd["lm_head.weight"], DTensor)
    plain = make_model()
    plain.load_state_dict(full_msd)
    assert max_diff(plain.state_dict(), want) < 2e-5


def tp_slice(full, spec):
    """This rank's slice of a whole reference tensor under a tensor-parallel spec."""
    mesh, placement, _, fused = spec
    n, r = mesh.size(), mesh.get_local_rank()
    return ember.cat([b.chunk(n, dim=placement.dim)[r] for b in full.chunk(fused, dim=placement.dim)], dim=placement.dim)


def check_tensor_parallel(rank, world):
    """GPT-2 blocks cut Megatron-style over all ranks (same data everywhere) train as one process;
    a rowwise-parallel Embedding too; tp_state_dict gathers whole tensors and DTensors."""
    from ember.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, load_tp_state_dict,
                                                   parallelize_module, tp_state_dict)
    from ember.models.gpt2 import tensor_parallel_plan
    steps = 3
    ref, _ = reference(steps, 1)
    mesh = init_device_mesh("cpu", (world,))
    model = make_model()
    parallelize_module(model, mesh, tensor_parallel_plan())
    w = model.transformer.h[0].mlp.c_fc.weight
    assert w.shape[1] == 4 * 32 // world  # Conv1D [in, out]: this rank's columns
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    for s in range(steps):
        train(model, opt, global_batch(s, 1))
    full = tp_state_dict(model)
    assert max_diff(full, ref.state_dict()) < 2e-5, max_diff(full, ref.state_dict())
    sharded = tp_state_dict(model, full=False)
    assert isinstance(sharded["transformer.h.0.mlp.c_fc.weight"], DTensor)
    again = make_model()
    parallelize_module(again, mesh, tensor_parallel_plan())
    load_tp_state_dict(again, full)
    assert max_diff(tp_state_dict(again), full) == 0
    # Linear and Embedding layers: colwise then rowwise, vocabulary-parallel embedding
    ember.manual_seed(3)
    net = ember.nn.Sequential(ember.nn.Embedding(16, 8), ember.nn.Linear(8, 12), ember.nn.GELU(), ember.nn.Linear(12, 8))
    ember.manual_seed(3)
    plain = ember.nn.Sequential(ember.nn.Embedding(16, 8), ember.nn.Linear(8, 12), ember.nn.GELU(), ember.nn.Linear(12, 8))
    parallelize_module(net, mesh, {"0": RowwiseParallel(input_layouts=Replicate()), "1": ColwiseParallel(),
                                   "3": RowwiseParallel()})
    ids = ember.randint(0, 16, (5, 3), generator=ember.Generator().manual_seed(1))
    a, b = net(ids), plain(ids)
    assert (a - b).abs().max().item() < 1e-5
    a.square().sum().backward()
    b.square().sum().backward()
    assert (net[0].weight.grad - plain[0].weight.grad.chunk(world, 0)[rank]).abs().max().item() < 1e-5
    assert (net[3].bias.grad - plain[3].bias.grad).abs().max().item() < 1e-5


def check_fsdp_with_tp(rank, world):
    """A 2 x 2 mesh: tensor parallel inside each pair, FSDP across pairs (each pair its own data)."""
    from ember.distributed.tensor.parallel import parallelize_module
    from ember.models.gpt2 import tensor_parallel_plan
    assert world == 4
    steps = 3
    ref, _ = reference(steps, 2)
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    dp = mesh.get_coordinate()[0]
    model = make_model()
    parallelize_module(model, mesh["tp"], tensor_parallel_plan())
    specs = {k: p._tp_spec for k, p in model.named_parameters() if getattr(p, "_tp_spec", None) is not None}
    model = wrap(model, device_mesh=mesh["dp"])
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    for s in range(steps):
        train(model, opt, local_batch(s, dp, 2))
    got, want = model.state_dict(), ref.state_dict()
    for k, v in got.items():
        w = tp_slice(want[k], specs[k]) if k in specs and specs[k][1].is_shard() else want[k]
        assert (v - w).abs().max().item() < 2e-5, (k, (v - w).abs().max().item())


def check_pipeline(rank, world):
    """GPT-2 cut into one stage per rank, 4 micro-batches, GPipe and 1F1B: every stage's parameters
    match single-process training on the whole batch; the last stage's losses average to its loss."""
    from ember.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, split_sequential
    from ember.models.gpt2 import GPT2PipelineStage
    steps = 2

    def build(tied):
        ember.manual_seed(0)
        cfg = GPT2Config(vocab_size=67, n_positions=32, n_embd=32, n_layer=4, n_head=4, resid_pdrop=0.0,
                         embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=tied)
        return GPT2LMHeadModel(cfg)

    def loss_fn(logits, ids):
        return ember.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 67), ids[:, 1:].reshape(-1))

    for tied in (False, True):
        ref = build(tied)
        ropt = ember.optim.SGD(ref.parameters(), lr=0.5)
        ref_losses = []
        for s in range(steps):
            ropt.zero_grad()
            ids = global_batch(s, 2)
            loss = loss_fn(ref(ids).logits, ids)
            ref_losses.append(loss.item())
            loss.backward()
            ropt.step()
        want = dict(ref.named_parameters())
        for schedule_cls in (ScheduleGPipe, Schedule1F1B):
            model = build(tied)
            part = GPT2PipelineStage(model, rank, world)
            stage = PipelineStage(part, rank, world)
            schedule = schedule_cls(stage, 4, loss_fn=loss_fn)
            opt = ember.optim.SGD(part.parameters(), lr=0.5)
            for s in range(steps):
                opt.zero_grad()
                ids = global_batch(s, 2)
                losses = []
                if rank == 0:
                    schedule.step(ids)
                elif rank == world - 1:
                    schedule.step(target=ids, losses=losses)
                    # micro-batch losses: the mean of per-micro-batch means = the batch mean (equal sizes)
                    assert abs(sum(l.item() for l in losses) / 4 - ref_losses[s]) < 1e-4
                else:
                    schedule.step()
                part.sync_tied_gradients()
                opt.step()
            names = {id(q): n for n, q in model.named_parameters()}
            for k, p in part.named_parameters():
                name = names[id(p)]
                if name not in want:  # the last stage's copy of the tied embedding
                    name = "transformer.wte.weight"
                assert (p - want[name]).abs().max().item() < 2e-5, (tied, schedule_cls.__name__, k)
    # split_sequential: balanced stages of a Sequential
    seq = ember.nn.Sequential(*[ember.nn.Linear(4, 4) for _ in range(6)])
    parts = split_sequential(seq, world)
    assert len(parts) == world and sum(len(p) for p in parts) == 6


def check_cuda(rank, world):
    """FSDP on the GPU (Gloo moves CUDA tensors through host copies; NCCL when the job is one
    process): FULL_SHARD and CPU-offloaded shards both equal single-process CPU training."""
    steps = 3
    ref, _ = reference(steps, world, clip=0.5)
    ref_sd = ref.state_dict()
    cuda = ember.device("cuda", 0)
    for extra in ({}, {"cpu_offload": CPUOffload(offload_params=True)}):
        model = wrap(make_model(), device_id=cuda, **extra)
        where = "cpu" if extra else "cuda"
        assert all(p.device.type == where for p in model.parameters()), (extra, [p.device for p in model.parameters()])
        opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
        for s in range(steps):
            train(model, opt, local_batch(s, rank, world).to(cuda), clip=0.5)
        sd = {k: v.cpu() for k, v in model.state_dict().items()}
        assert max_diff(sd, ref_sd) < 1e-4, (extra, max_diff(sd, ref_sd))


CASES = {"training": check_training, "meta": check_meta_init, "mesh": check_mesh_and_dtensor, "save": check_checkpoint_save,
         "load": check_checkpoint_load, "tp": check_tensor_parallel, "fsdp_tp": check_fsdp_with_tp,
         "pipeline": check_pipeline, "cuda": check_cuda}


def main():
    dist.init_process_group(os.environ.get("EMBER_TEST_BACKEND", "gloo"))
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.set_num_threads(1)
    CASES[sys.argv[1]](rank, world)
    print(f"OK {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
