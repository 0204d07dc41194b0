"""FSDP, tensor and pipeline parallelism, DeviceMesh/DTensor and distributed checkpoints on loopback Gloo (2 and 4 processes started
by ember-run, tests/python/fsdp_worker.py): parameters equal single-process training, checkpoints
saved at one world size load at others, and a save killed while writing or at its commit point
leaves the previous checkpoint loadable."""
import os
import re
import subprocess
import sys

import pytest

import ember.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="ember built without Gloo (EMBER_DISTRIBUTED off)")

HERE = os.path.dirname(os.path.abspath(__file__))


def launch(nproc, case, env_extra=None, timeout=300):
    env = dict(os.environ, **(env_extra or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                           os.path.join(HERE, "fsdp_worker.py"), case],
                          capture_output=True, text=True, env=env, timeout=timeout)


def ok(proc, nproc):
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert sorted(int(r) for r in re.findall(r"OK (\d+)", proc.stdout)) == list(range(nproc)), proc.stdout


@pytest.mark.parametrize("nproc", [2, 4])
def test_fsdp_training_equals_single_process(nproc):
    """FULL_SHARD (with and without forward prefetch), SHARD_GRAD_OP and NO_SHARD: 3 AdamW steps
    with clip_grad_norm_ on a 3-block GPT-2 give the single-process parameters and norms; bf16
    mixed precision stays close; a freed parameter view raises instead of reading freed memory."""
    ok(launch(nproc, "training"), nproc)


def test_fsdp_materialises_a_model_built_on_the_meta_device():
    ok(launch(2, "meta"), 2)


@pytest.mark.parametrize("nproc", [2, 4])
def test_device_mesh_and_dtensor(nproc, tmp_path):
    ok(launch(nproc, "mesh", {"EMBER_TEST_DIR": str(tmp_path)}), nproc)


def test_sharded_checkpoint_saved_at_4_loads_at_2_and_1(tmp_path):
    env = {"EMBER_TEST_DIR": str(tmp_path), "EMBER_TEST_SAVED_WORLD": "4"}
    ok(launch(4, "save", env), 4)
    files = sorted(os.listdir(tmp_path / "ckpt"))
    assert ".metadata" in files and len([f for f in files if f.endswith(".safetensors")]) == 4, files
    ok(launch(2, "load", env), 2)
    ok(launch(1, "load", env), 1)


@pytest.mark.parametrize("where", ["commit", "write"])
def test_a_killed_save_leaves_the_previous_checkpoint(tmp_path, where):
    env = {"EMBER_TEST_DIR": str(tmp_path), "EMBER_TEST_SAVED_WORLD": "2", "EMBER_TEST_CRASH": where}
    proc = launch(2, "save", env)
    assert proc.returncode != 0, proc.stderr[-2000:]
    # the killed save got as far as writing pieces that the committed .metadata does not name
    import json
    ckpt = tmp_path / "ckpt"
    named = {c["file"] for t in json.loads((ckpt / ".metadata").read_text())["tensors"].values() for c in t["chunks"]}
    written = {f for f in os.listdir(ckpt) if f.endswith(".safetensors")}
    assert named < written, (named, written)
    env.pop("EMBER_TEST_CRASH")
    ok(launch(2, "load", env), 2)  # the step-2 checkpoint, intact


@pytest.mark.parametrize("nproc", [2, 4])
def test_tensor_parallel_gpt2_equals_single_process(nproc):
    ok(launch(nproc, "tp"), nproc)


def test_fsdp_and_tensor_parallel_on_a_2d_mesh():
    ok(launch(4, "fsdp_tp"), 4)


@pytest.mark.parametrize("nproc", [2, 4])
def test_pipeline_gpipe_and_1f1b_equal_single_process(nproc):
    ok(launch(nproc, "pipeline"), nproc)


def test_a_checkpoint_written_from_cpp_loads_in_python(tmp_path):
    """C++'s checkpoint::save (3 ranks of the C++ test binary, FSDP pieces by rows) and Python's
    loader share the layout: the loaded weight is the three ranks' row pieces in order."""
    import datetime

    import ember
    import ember.distributed.checkpoint as dcp
    from ember.safetensors import load_file
    binary = os.path.join(HERE, "..", "..", "build", "tests", "cpp", "test_distributed")
    if not os.path.exists(binary):
        pytest.skip("needs build/tests/cpp/test_distributed")
    store = dist.TCPStore("127.0.0.1", 0, None, True, wait_for_workers=False, timeout=datetime.timedelta(seconds=60))
    procs = [subprocess.Popen([binary, "--gtest_filter=DistributedWorker.Run"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env=dict(os.environ, EMBER_TEST_RANK=str(r), EMBER_TEST_WORLD="3",
                                       EMBER_TEST_PORT=str(store.port), EMBER_TEST_MODE="dcp_save",
                                       EMBER_TEST_DIR=str(tmp_path))) for r in range(3)]
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out[-2000:]
    ckpt = tmp_path / "ckpt"
    nn = ember.nn
    state = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).state_dict()
    dcp.load(state, checkpoint_id=str(ckpt), no_dist=True)
    pieces = {}
    for f in sorted(os.listdir(ckpt)):
        if f.endswith(".safetensors"):
            pieces.update(load_file(ckpt / f))
    rows = ember.cat([pieces[f"0.weight@{r * 4},0"] for r in range(3)])
    assert ember.equal(state["0.weight"], rows)
    assert ember.equal(state["2.bias"], ember.cat([pieces[f"2.bias@{r}"] for r in range(3)]))  # a row each


@pytest.mark.parametrize("backend,nproc", [("gloo", 2), ("nccl", 1)])
def test_fsdp_on_a_gpu(backend, nproc):
    import ember
    if not ember.cuda.is_available():
        pytest.skip("no CUDA GPU: FSDP on CUDA tensors (Gloo host copies, NCCL) did not run")
    if backend == "nccl" and not dist.is_nccl_available():
        pytest.skip("ember built without NCCL")
    ok(launch(nproc, "cuda", {"EMBER_TEST_BACKEND": backend}), nproc)
