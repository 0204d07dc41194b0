"""ember.multiprocessing (torch.multiprocessing): spawn runs fn(rank, *args) in fresh processes, a
DDP-style all-reduce among them works, and a failing process's traceback reaches the parent."""
import os

import pytest

import ember
import ember.multiprocessing as mp


def _write_rank(rank, out_dir, scale):
    with open(os.path.join(out_dir, f"{rank}.txt"), "w") as f:
        f.write(str(ember.full((2,), float(rank * scale)).sum().item()))


def _all_reduce(rank, world, init_file, out_dir):
    import ember.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    t = ember.tensor([float(rank + 1)])
    dist.all_reduce(t)
    with open(os.path.join(out_dir, f"sum{rank}.txt"), "w") as f:
        f.write(str(t.item()))
    dist.destroy_process_group()


def _fail_on_one(rank):
    if rank == 1:
        raise ValueError("rank one gives up")


def _exit_hard(rank):
    os._exit(3 if rank == 0 else 0)


def test_spawn_runs_every_rank(tmp_path):
    mp.spawn(_write_rank, args=(str(tmp_path), 10), nprocs=3)
    assert sorted(os.listdir(tmp_path)) == ["0.txt", "1.txt", "2.txt"]
    assert (tmp_path / "2.txt").read_text() == "40.0"
    os.makedirs(tmp_path / "later")
    ctx = mp.spawn(_write_rank, args=(str(tmp_path / "later"), 1), nprocs=1, join=False)
    assert len(ctx.pids()) == 1
    while not ctx.join():
        pass
    assert (tmp_path / "later" / "0.txt").read_text() == "0.0"


def test_spawned_ranks_all_reduce_over_gloo(tmp_path):
    mp.spawn(_all_reduce, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2)
    assert [(tmp_path / f"sum{r}.txt").read_text() for r in range(2)] == ["3.0", "3.0"]


def test_a_failure_reaches_the_parent_with_its_traceback():
    with pytest.raises(mp.ProcessRaisedException, match=r"(?s)Process 1 terminated.*ValueError: rank one gives up"):
        mp.spawn(_fail_on_one, nprocs=2)
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as e:
        mp.spawn(_exit_hard, nprocs=2)
    assert e.value.exit_code == 3
    with pytest.raises(ValueError, match="nprocs"):
        mp.spawn(_write_rank, nprocs=0)
    assert mp.Queue is not None and mp.cpu_count() >= 1  # Python's multiprocessing, re-exported


def test_share_memory_says_that_tensors_stay_process_local():
    t = ember.ones(3)
    with pytest.warns(UserWarning, match="no shared-memory tensors"):
        assert t.share_memory_() is t
    assert not t.is_shared()
    model = ember.nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="Hogwild"):
        assert model.share_memory() is model
