"""ember-run: starts the worker processes of a distributed job, as torchrun does.

    ember-run --nproc_per_node=2 train.py --epochs 3
    python -m ember.distributed.run --nnodes=2 --node_rank=0 --master_addr=10.0.0.1 --nproc_per_node=4 train.py

Each worker gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK,
ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RUN_ID (so `init_process_group("gloo")`
finds the job), and OMP_NUM_THREADS=1 unless set. The launcher forwards SIGINT/SIGTERM to the
workers; when one worker fails, it stops the others and reports which rank failed, its exit code
and the last lines it wrote to stderr, then restarts the group up to --max_restarts times.
"""
import argparse
import collections
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

TAIL_LINES = 20
STOP_GRACE_S = 5.0


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="ember-run", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nproc_per_node", "--nproc-per-node", default="1",
                    help="workers on this node: a number, or 'cpu' (one per core), 'gpu'/'auto' (one per GPU, else 1)")
    ap.add_argument("--nnodes", default="1", help="number of nodes (a number, or MIN:MAX with MIN used)")
    ap.add_argument("--node_rank", "--node-rank", type=int, default=0)
    ap.add_argument("--master_addr", "--master-addr", default="127.0.0.1")
    ap.add_argument("--master_port", "--master-port", type=int, default=29500)
    ap.add_argument("--rdzv_endpoint", "--rdzv-endpoint", default="", help="host:port of the rendezvous (the master)")
    ap.add_argument("--rdzv_backend", "--rdzv-backend", default="static")
    ap.add_argument("--rdzv_id", "--rdzv-id", default="")
    ap.add_argument("--standalone", action="store_true", help="one node, a free port picked for the master")
    ap.add_argument("--max_restarts", "--max-restarts", type=int, default=0)
    ap.add_argument("--monitor_interval", "--monitor-interval", type=float, default=0.1)
    ap.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    ap.add_argument("--no_python", "--no-python", action="store_true",
                    help="run the script as an executable (compiled programs are recognised without it)")
    ap.add_argument("training_script")
    ap.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return ap.parse_args(argv)


def nproc(value):
    if value in ("cpu",):
        return os.cpu_count() or 1
    if value in ("gpu", "auto"):
        try:
            import ember
            n = ember.cuda.device_count()
        except Exception:  # noqa: BLE001 (no CUDA build or no driver: one worker, as torchrun's auto on CPU)
            n = 0
        return n if n > 0 else 1
    n = int(value)
    if n < 1:
        raise SystemExit(f"ember-run: --nproc_per_node must be at least 1, got {n}")
    return n


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Worker:
    def __init__(self, local_rank, rank, proc):
        self.local_rank, self.rank, self.proc = local_rank, rank, proc
        self.tail = collections.deque(maxlen=TAIL_LINES)
        self.reader = threading.Thread(target=self._pump, daemon=True)
        self.reader.start()

    def _pump(self):
        # the worker's stderr, passed through and its last lines kept for the failure report
        for raw in iter(self.proc.stderr.readline, b""):
            sys.stderr.buffer.write(raw)
            sys.stderr.flush()
            self.tail.append(raw.decode(errors="replace").rstrip("\n"))


def _is_program(path):
    """A compiled program (build/train_fashion_mnist), run as it is even without --no_python."""
    if path.endswith(".py") or not os.path.isfile(path) or not os.access(path, os.X_OK):
        return False
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def start_workers(args, n_local, world, master_addr, master_port, run_id):
    workers = []
    for local in range(n_local):
        rank = args.node_rank * n_local + local
        env = dict(os.environ)
        env.update(RANK=str(rank), LOCAL_RANK=str(local), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(n_local),
                   GROUP_RANK=str(args.node_rank), GROUP_WORLD_SIZE=str(world // n_local), ROLE_RANK=str(rank),
                   ROLE_WORLD_SIZE=str(world), ROLE_NAME="default", MASTER_ADDR=master_addr,
                   MASTER_PORT=str(master_port), TORCHELASTIC_RUN_ID=run_id, TORCHELASTIC_RESTART_COUNT=str(
                       args._restarts), PYTHONUNBUFFERED="1")
        env.setdefault("OMP_NUM_THREADS", "1")
        if args.no_python or _is_program(args.training_script):
            cmd = [args.training_script]
        elif args.module:
            cmd = [sys.executable, "-u", "-m", args.training_script]
        else:
            cmd = [sys.executable, "-u", args.training_script]
        cmd += args.training_script_args
        proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, start_new_session=False)
        workers.append(Worker(local, rank, proc))
    return workers


def stop(workers, sig=signal.SIGTERM):
    for w in workers:
        if w.proc.poll() is None:
            try:
                w.proc.send_signal(sig)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + STOP_GRACE_S
    for w in workers:
        left = max(0.0, deadline - time.monotonic())
        try:
            w.proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            w.proc.kill()
            w.proc.wait()
    for w in workers:
        w.reader.join(timeout=1.0)


def describe_exit(code):
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def monitor(workers, interval):
    """Waits until every worker succeeded (None) or one failed (that worker)."""
    while True:
        running = False
        for w in workers:
            code = w.proc.poll()
            if code is None:
                running = True
            elif code != 0:
                return w
        if not running:
            return None
        time.sleep(interval)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    n_local = nproc(args.nproc_per_node)
    nnodes = int(str(args.nnodes).split(":")[0])
    if not 0 <= args.node_rank < nnodes:
        raise SystemExit(f"ember-run: --node_rank {args.node_rank} is not in [0, --nnodes = {nnodes})")
    master_addr, master_port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, port = args.rdzv_endpoint.rpartition(":")
        master_addr, master_port = (host or args.rdzv_endpoint), int(port or master_port)
    if args.standalone:
        nnodes, master_addr, master_port = 1, "127.0.0.1", free_port()
    world = n_local * nnodes
    run_id = args.rdzv_id or uuid.uuid4().hex[:12]

    stopping = {"signal": None}
    workers = []

    def on_signal(signum, _frame):
        stopping["signal"] = signum
        stop(workers, signum)

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, on_signal)

    args._restarts = 0
    while True:
        workers[:] = start_workers(args, n_local, world, master_addr, master_port, run_id)
        failed = monitor(workers, args.monitor_interval)
        if stopping["signal"] is not None:
            stop(workers)
            return 128 + stopping["signal"]
        if failed is None:
            for w in workers:
                w.reader.join(timeout=1.0)
            return 0
        code = failed.proc.returncode
        stop(workers)
        lines = "\n".join("    " + line for line in failed.tail) or "    (nothing on stderr)"
        print(f"ember-run: worker rank {failed.rank} (local_rank {failed.local_rank}, pid {failed.proc.pid}) failed "
              f"with {describe_exit(code)}; the other workers were stopped. Its last lines on stderr:\n{lines}",
              file=sys.stderr, flush=True)
        if args._restarts >= args.max_restarts:
            return 1
        args._restarts += 1
        print(f"ember-run: restarting the workers ({args._restarts} of {args.max_restarts} restarts)",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
