"""ember.distributed on loopback: the stores in-process, and whole jobs started by the launcher
(ember-run) with 2 and 4 Gloo processes running every collective (tests/python/dist_worker.py);
a worker that dies or hangs fails the job with the rank, the exit code and the error."""
import datetime
import os
import re
import subprocess
import sys
import time

import pytest

import ember
import ember.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="ember built without Gloo (EMBER_DISTRIBUTED off)")

HERE = os.path.dirname(os.path.abspath(__file__))


def launch(nproc, case, timeout=120, extra=(), env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                           *extra, os.path.join(HERE, "dist_worker.py"), case],
                          capture_output=True, text=True, env=env, timeout=timeout)
    return proc, time.monotonic() - start


def oks(stdout):
    """The ranks that printed their "OK <rank>" line."""
    return sorted(int(r) for r in re.findall(r"OK (\d+)", stdout))


@pytest.mark.parametrize("nproc", [2, 4])
def test_every_collective_through_the_launcher(nproc):
    proc, _ = launch(nproc, "collectives")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert oks(proc.stdout) == list(range(nproc)), proc.stdout


def test_ddp_matches_single_process_training_on_the_whole_batch(tmp_path):
    """DDP over 2 ranks equals one process on the concatenated batch (3 SGD steps, BatchNorm
    buffers broadcast), no_sync accumulation, find_unused_parameters and its absence's error."""
    proc, _ = launch(2, "ddp", env_extra={"EMBER_TEST_CKPT": str(tmp_path / "ckpt.pt")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert oks(proc.stdout) == [0, 1], proc.stdout


def test_the_cpp_training_demo_under_the_launcher(tmp_path):
    """build/train_fashion_mnist started by ember-run on 2 processes: DDP from C++, a shard of
    each epoch per process, rank 0 prints the table and writes the checkpoint."""
    demo = os.path.join(HERE, "..", "..", "build", "train_fashion_mnist")
    if not os.path.exists(demo) or not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("needs build/train_fashion_mnist and Debian's dataset-fashion-mnist")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone", "--nproc_per_node=2",
                           "--no_python", demo, "--epochs", "1", "--limit-train", "2000", "--limit-test", "500",
                           "--no-progress", "--out", str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 processes (ember-run): DistributedDataParallel over Gloo, 64 samples per process" in proc.stdout
    assert proc.stdout.count("best test accuracy") == 1  # rank 0 alone prints
    assert (tmp_path / "best.pt").exists() and (tmp_path / "last.pt").exists()


def test_cuda_tensors_through_gloo_and_ddp_on_a_gpu():
    if not ember.cuda.is_available():
        pytest.skip("no CUDA GPU: Gloo's host-copy path for CUDA tensors did not run")
    proc, _ = launch(2, "cuda_gloo")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert oks(proc.stdout) == [0, 1], proc.stdout


def test_max_restarts_restarts_the_group():
    proc, _ = launch(2, "flaky", extra=("--max_restarts=1",))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "exit code 4" in proc.stderr and "restarting the workers (1 of 1 restarts)" in proc.stderr
    assert oks(proc.stdout) == [0, 1], proc.stdout


def test_sigterm_to_the_launcher_stops_the_workers():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen([sys.executable, "-m", "ember.distributed.run", "--standalone", "--nproc_per_node=2",
                             os.path.join(HERE, "dist_worker.py"), "sleep"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    ready = [proc.stdout.readline() for _ in range(2)]
    assert sorted(r.strip() for r in ready) == ["ready 0", "ready 1"]
    start = time.monotonic()
    proc.terminate()
    assert proc.wait(timeout=20) == 128 + 15
    assert time.monotonic() - start < 15


def test_a_dead_worker_stops_the_job_and_is_reported():
    proc, elapsed = launch(3, "die")
    assert proc.returncode == 1
    assert "worker rank 1" in proc.stderr and "exit code 3" in proc.stderr, proc.stderr
    assert "boom: rank 1 gives up" in proc.stderr.split("failed with")[-1]  # the report's last lines
    assert elapsed < 25  # the others were stopped, not waited for


def test_a_hanging_worker_fails_the_collective_within_the_timeout():
    proc, elapsed = launch(2, "hang")
    assert proc.returncode == 1
    assert "all_reduce on process group 'default_pg'" in proc.stderr, proc.stderr[-3000:]
    assert "missing rank 1" in proc.stderr, proc.stderr[-3000:]
    assert "worker rank 0" in proc.stderr and "exit code 5" in proc.stderr
    assert elapsed < 30


def test_tcp_store_and_file_store(tmp_path):
    master = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=datetime.timedelta(seconds=5))
    client = dist.TCPStore("127.0.0.1", master.port, timeout=datetime.timedelta(seconds=5))
    master.set("key", "value")
    assert client.get("key") == b"value"
    assert client.add("counter", 2) == 2 and master.add("counter", 5) == 7 and master.get("counter") == b"7"
    assert client.check(["key", "counter"]) and not client.check(["nope"])
    assert master.compare_set("cas", "", "first") == b"first"
    with pytest.raises(dist.DistStoreError, match="'nope'"):
        client.wait(["nope"], datetime.timedelta(milliseconds=100))
    assert isinstance(dist.DistStoreError("x"), RuntimeError)
    fs = dist.FileStore(str(tmp_path / "store"), 1)
    fs.set("a", b"\x00\x01")
    assert dist.FileStore(str(tmp_path / "store"), 1).get("a") == b"\x00\x01"
    p = dist.PrefixStore("ns", fs)
    p.set("k", "v")
    assert fs.get("ns/k") == b"v"


def test_api_before_init_and_bad_arguments():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="init_process_group"):
        dist.get_world_size()
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("mpi", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    with pytest.raises(ValueError, match="RANK"):
        env = {k: os.environ.pop(k) for k in ("RANK", "WORLD_SIZE") if k in os.environ}
        try:
            dist.init_process_group("gloo")
        finally:
            os.environ.update(env)


def test_single_process_group_in_process(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/rdzv", rank=0, world_size=1)
    try:
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        t = ember.arange(4.0)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
        with pytest.raises(TypeError, match="AVG"):
            dist.all_reduce(ember.arange(3), op=dist.ReduceOp.AVG)
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("gloo", init_method=f"file://{tmp_path}/other", rank=0, world_size=1)
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_nccl_backend_refuses_cpu_tensors_and_runs_on_a_gpu(tmp_path):
    """The NCCL group joins lazily; CPU tensors get a clear error. On a GPU (one process: NCCL's
    one-rank communicator) the collectives run on the device and Work.wait orders the caller's
    stream after them."""
    if not dist.is_nccl_available():
        pytest.skip("this build has no NCCL backend (a CUDA build that found libnccl)")
    dist.init_process_group("nccl", init_method=f"file://{tmp_path}/rdzv", rank=0, world_size=1)
    try:
        assert dist.get_backend() == "nccl"
        with pytest.raises(ValueError, match="dense CUDA tensors"):
            dist.all_reduce(ember.ones(3))
        if not ember.cuda.is_available():
            pytest.skip("no CUDA GPU here: the NCCL collectives themselves did not run")
        t = ember.arange(6.0, device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        assert t.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
        work.wait()
        assert t.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        out = ember.zeros(6, device="cuda", dtype=ember.bfloat16)
        dist.all_gather_into_tensor(out, ember.full((6,), 2.0, device="cuda", dtype=ember.bfloat16))
        assert out.float().cpu().tolist() == [2.0] * 6
        dist.broadcast(t, src=0)
        dist.barrier()
    finally:
        dist.destroy_process_group()
