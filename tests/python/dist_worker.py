"""One worker of tests/python/test_distributed.py's jobs, started by ember-run: runs the case named
on the command line against torch.distributed's API and prints "OK <rank>" when every check held
(an assertion error exits non-zero, which the launcher reports)."""
import datetime
import os
import sys
import time

import ember
import ember.distributed as dist


def check_collectives(rank, world):
    for dtype in (ember.float32, ember.float64, ember.int64, ember.bfloat16):
        t = ember.full((5,), rank + 1, dtype=dtype)
        dist.all_reduce(t)
        assert t.double().sum().item() == 5 * world * (world + 1) / 2, (dtype, t)
        for op, want in ((dist.ReduceOp.MAX, world), (dist.ReduceOp.MIN, 1)):
            t = ember.full((3,), rank + 1, dtype=dtype)
            dist.all_reduce(t, op=op)
            assert t.double().max().item() == want, (dtype, op, t)
    t = ember.full((2,), float(rank))
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert abs(t[0].item() - (world - 1) / 2) < 1e-6
    # broadcast / reduce with global src and dst
    b = ember.full((4,), 7 if rank == world - 1 else 0)
    dist.broadcast(b, src=world - 1)
    assert b.min().item() == 7
    r = ember.full((2,), 1.0)
    dist.reduce(r, dst=0)
    if rank == 0:
        assert r[0].item() == world
    # gathers and scatters
    outs = [ember.zeros(3) for _ in range(world)]
    dist.all_gather(outs, ember.arange(3.0) + 10 * rank)
    assert [o[2].item() for o in outs] == [10 * i + 2 for i in range(world)]
    flat = ember.zeros(world * 2)
    dist.all_gather_into_tensor(flat, ember.full((2,), float(rank)))
    assert flat.tolist() == [float(i) for i in range(world) for _ in range(2)]
    gl = [ember.zeros(2) for _ in range(world)] if rank == 0 else None
    dist.gather(ember.full((2,), float(rank)), gl, dst=0)
    if rank == 0:
        assert [g[0].item() for g in gl] == list(range(world))
    piece = ember.zeros(2)
    dist.scatter(piece, [ember.full((2,), float(i)) for i in range(world)] if rank == 0 else None, src=0)
    assert piece[1].item() == rank
    rs = ember.zeros(2)
    dist.reduce_scatter_tensor(rs, ember.ones(world * 2) * (rank + 1))
    assert rs[0].item() == world * (world + 1) / 2
    a2a = [ember.zeros(1) for _ in range(world)]
    dist.all_to_all(a2a, [ember.full((1,), float(100 * rank + i)) for i in range(world)])
    assert [x.item() for x in a2a] == [100 * i + rank for i in range(world)]
    # async_op: work handles
    works, ts = [], []
    for i in range(5):
        ts.append(ember.full((100,), float(i)))
        works.append(dist.all_reduce(ts[-1], async_op=True))
    for i, w in enumerate(works):
        w.wait()
        assert ts[i][0].item() == i * world and w.is_completed()
    # point to point around a ring
    out, got = ember.full((3,), float(rank)), ember.zeros(3)
    req = dist.isend(out, dst=(rank + 1) % world)
    dist.recv(got, src=(rank - 1) % world)
    req.wait()
    assert got[0].item() == (rank - 1) % world
    # from any source: rank 0 takes one message from each other rank, in whatever order
    if rank == 0:
        senders = set()
        for _ in range(world - 1):
            buf = ember.zeros(1)
            who = dist.recv(buf, tag=3)
            assert buf.item() == who * 10
            senders.add(who)
        assert senders == set(range(1, world))
    else:
        dist.send(ember.full((1,), float(rank * 10)), dst=0, tag=3)
    # uneven all_to_all_single: rank r sends i + 1 rows to rank i, each row filled with 100 r + i
    send_rows = [i + 1 for i in range(world)]
    recv_rows = [rank + 1] * world
    src = ember.cat([ember.full((i + 1, 2), float(100 * rank + i)) for i in range(world)])
    dst = ember.zeros(sum(recv_rows), 2)
    dist.all_to_all_single(dst, src, output_split_sizes=recv_rows, input_split_sizes=send_rows)
    want = [float(100 * j + rank) for j in range(world) for _ in range(rank + 1)]
    assert dst[:, 1].tolist() == want, (dst, want)
    even = ember.zeros(world)
    dist.all_to_all_single(even, ember.arange(float(world)) + 10 * rank)
    assert even.tolist() == [10.0 * j + rank for j in range(world)]
    # differentiable collectives: x.grad is the gradient of the sum of every rank's loss
    import ember.distributed.nn.functional as dfn
    x = (ember.arange(3.0) * (rank + 1)).requires_grad_()
    (dfn.all_reduce(x) * (rank + 1)).sum().backward()
    assert x.grad.tolist() == [world * (world + 1) / 2] * 3
    x = ember.full((2,), float(rank)).requires_grad_()
    parts = dfn.all_gather(x)
    assert [p[0].item() for p in parts] == list(range(world))
    sum(p.sum() * (i + 1) for i, p in enumerate(parts)).backward()  # every rank weighs part i by i + 1
    assert x.grad.tolist() == [float(world * (rank + 1))] * 2
    x = ember.ones(world * 2).requires_grad_()
    out = ember.zeros(2)
    y = dfn.reduce_scatter(out, list(x.reshape(world, 2).unbind(0)))
    assert out.tolist() == [float(world)] * 2
    (y * (rank + 1)).sum().backward()
    assert x.grad.tolist() == [float(j + 1) for j in range(world) for _ in range(2)]
    x = ember.full((2,), float(rank + 5)).requires_grad_()
    b = dfn.broadcast(x, src=0)
    (b * (rank + 1)).sum().backward()
    assert b[0].item() == 5.0 and x.grad[0].item() == (world * (world + 1) / 2 if rank == 0 else 0.0)
    # objects
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "name": f"w{rank}"})
    assert [o["name"] for o in objs] == [f"w{i}" for i in range(world)]
    lst = [f"from {rank}", rank] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == ["from 0", 0]
    # a subgroup of the even ranks: global src, group ranks
    evens = list(range(0, world, 2))
    g = dist.new_group(evens)
    if rank in evens:
        x = ember.full((1,), float(rank))
        dist.all_reduce(x, group=g)
        assert x.item() == sum(evens) and dist.get_world_size(g) == len(evens)
        assert dist.get_rank(g) == evens.index(rank)
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
    dist.barrier()


def make_model(seed, heads=1):
    ember.manual_seed(seed)
    nn = ember.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.BatchNorm1d(16))
            self.heads = nn.ModuleList([nn.Linear(16, 4) for _ in range(heads)])

        def forward(self, x, head=0):
            return self.heads[head](self.body(x))

    return Net()


def check_ddp(rank, world):
    from ember.nn.parallel import DistributedDataParallel as DDP
    from ember.utils.data import DistributedSampler
    ember.manual_seed(1234)
    data, target = ember.randn(4 * world, 8), ember.randn(4 * world, 4)
    mine = slice(4 * rank, 4 * rank + 4)
    loss_fn = ember.nn.functional.mse_loss
    # replicas start from rank 0's weights (each rank initialised differently here)
    # (BatchNorm in eval mode: in training it normalises each shard by its own statistics, so DDP
    # could not equal one process -- torch's SyncBatchNorm's business; its buffers still travel)
    local = make_model(seed=rank).eval()
    local.body[2].running_mean.fill_(float(rank))
    model = DDP(local, bucket_cap_mb=0.0002)  # tiny buckets: several all_reduces
    assert len(model._buckets) > 2
    assert model.module.body[2].running_mean.abs().max().item() == 0  # rank 0's buffers
    ref = make_model(seed=0).eval()
    for (n, p), (_, q) in zip(model.module.named_parameters(), ref.named_parameters()):
        assert ember.equal(p, q), n
    assert all(k.startswith("module.") for k in model.state_dict())
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss_fn(model(data[mine]), target[mine]).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_fn(ref(data), target).backward()
        ref_opt.step()
    for (n, p), (_, q) in zip(model.module.named_parameters(), ref.named_parameters()):
        assert ember.allclose(p, q, atol=1e-5), (n, (p - q).abs().max().item())
    # no_sync: two micro-batches accumulate locally, the second backward averages the sum
    opt.zero_grad()
    ref_opt.zero_grad()
    with model.no_sync():
        loss_fn(model(data[mine]), target[mine]).backward()
    local = [p.grad.clone() for p in model.parameters()]
    loss_fn(model(data[mine] * 2), target[mine]).backward()
    loss_fn(ref(data), target).backward()
    loss_fn(ref(data * 2), target).backward()
    for (n, p), (_, q) in zip(model.module.named_parameters(), ref.named_parameters()):
        assert ember.allclose(p.grad, q.grad, atol=1e-5), ("no_sync", n)
    assert any(not ember.equal(a, p.grad) for a, p in zip(local, model.parameters()))
    # find_unused_parameters: a head the forward does not use
    two = DDP(make_model(seed=0, heads=2), find_unused_parameters=True)
    for _ in range(2):
        two.zero_grad()
        loss_fn(two(data[mine], head=0), target[mine]).backward()
    assert two.module.heads[1].weight.grad.abs().max().item() == 0
    strict = DDP(make_model(seed=0, heads=2))
    loss_fn(strict(data[mine], head=0), target[mine]).backward()
    try:
        strict(data[mine], head=0)
        raise AssertionError("DDP did not notice the unused parameters")
    except RuntimeError as e:
        assert "find_unused_parameters=True" in str(e)
    # a checkpoint saved by rank 0 and loaded everywhere, then training on with a scheduler
    path = os.environ["EMBER_TEST_CKPT"]
    if rank == 0:
        ember.save(model.module.state_dict(), path)
    dist.barrier()
    fresh = make_model(seed=100 + rank).eval()
    fresh.load_state_dict(ember.load(path))
    for (n, p), (_, q) in zip(fresh.named_parameters(), model.module.named_parameters()):
        assert ember.equal(p, q), ("checkpoint", n)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(2):
        opt.zero_grad()
        loss_fn(model(data[mine]), target[mine]).backward()
        opt.step()
        sched.step()
    gathered = [ember.zeros(1) for _ in range(world)]
    dist.all_gather(gathered, model.module.heads[0].weight.sum().reshape(1))
    assert all(ember.equal(g, gathered[0]) for g in gathered)  # replicas stay identical
    # DistributedSampler takes the group's size and rank
    sampler = DistributedSampler(list(range(10)), shuffle=False)
    assert sampler.num_replicas == world and list(sampler)[0] == rank


def main():
    case = sys.argv[1]
    if case == "hang":
        # a short timeout for the collectives only: the rendezvous keeps a long one (a slow start
        # of the other process on a busy machine must not look like a hang)
        rank_env, world_env = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world_env, rank_env == 0,
                              datetime.timedelta(seconds=60))
        dist.init_process_group("gloo", store=store, rank=rank_env, world_size=world_env,
                                timeout=datetime.timedelta(seconds=3))
    else:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
    if case == "collectives":
        check_collectives(rank, world)
    elif case == "ddp":
        check_ddp(rank, world)
    elif case == "cuda_gloo":  # CUDA tensors through Gloo (host copies), and DDP of a CUDA model
        from ember.nn.parallel import DistributedDataParallel as DDP
        t = ember.full((1000,), float(rank + 1), device="cuda")
        dist.all_reduce(t)
        assert t.device.type == "cuda" and t[0].item() == world * (world + 1) / 2
        outs = [ember.zeros(3, device="cuda") for _ in range(world)]
        dist.all_gather(outs, ember.full((3,), float(rank), device="cuda"))
        assert [o[0].item() for o in outs] == list(range(world))
        model = DDP(make_model(seed=rank).cuda().eval())
        model(ember.randn(4, 8, device="cuda")).sum().backward()
        w = model.module.heads[0].weight.grad.reshape(1, -1)[:, :4].contiguous()
        everyone = [ember.zeros_like(w) for _ in range(world)]
        dist.all_gather(everyone, w)
        assert all(ember.equal(e, everyone[0]) for e in everyone)  # averaged: the same on every rank
    elif case == "flaky":  # the first attempt's rank 1 fails; the restarted group succeeds
        if rank == 1 and os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0":
            os._exit(4)
        dist.barrier()
    elif case == "sleep":
        sys.stdout.write(f"ready {rank}\n")
        sys.stdout.flush()
        time.sleep(60)
    elif case == "die":
        if rank == 1:
            print("boom: rank 1 gives up", file=sys.stderr, flush=True)
            os._exit(3)
        time.sleep(30)  # the launcher stops this worker once rank 1 failed
    elif case == "hang":
        if rank == 1:
            time.sleep(60)  # never joins the all_reduce
        t = ember.ones(4)
        start = time.monotonic()
        try:
            dist.all_reduce(t)
        except dist.DistBackendError as e:
            print(f"rank {rank}: {e} after {time.monotonic() - start:.1f} s", file=sys.stderr, flush=True)
            sys.exit(5)
    dist.destroy_process_group()
    sys.stdout.write(f"OK {rank}\n")  # one write: lines of several workers on one pipe stay whole
    sys.stdout.flush()


if __name__ == "__main__":
    main()
