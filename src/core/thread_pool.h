#pragma once
// ember's intra-op thread pool (used through parallel_for in core/parallel.h).
//
// Why not an OpenMP parallel region: its closing barrier waits for every thread of the team.
// On a machine where another process is busy, the second thread is often not running when a
// region opens, and the caller then waits a scheduler timeslice (milliseconds) for it to wake
// up, arrive and leave. A GPT generate loop of small ops went from 13 ms to 330 ms per call
// that way with one busy process beside it (bench/bench_contention.py).
//
// Here the caller never waits for a thread that has not started: the work is cut into chunks
// fixed in advance (so results do not depend on who runs what), every thread, the caller
// included, claims chunks from one atomic counter, and the caller only waits for chunks a
// worker has already claimed. A worker that wakes late finds nothing left and goes back to
// sleep; under contention the loop degrades to the caller running it alone, never to a
// stall. Idle workers spin for a few microseconds (back-to-back ops hand off fast) and then
// sleep on a futex, so they do not burn a core that another process needs.
#include <cstdint>

namespace ember::detail {

using ChunkFn = void (*)(void* ctx, int64_t chunk);

// Calls fn(ctx, i) once for every i in [0, nchunks), on the calling thread and the pool's
// workers, and returns when all have returned. The first exception thrown by a chunk is
// rethrown here (the other chunks still run). Inside a chunk, OpenMP's thread count is 1, so a
// BLAS call made there runs single-threaded instead of nesting a team.
void run_chunks(int64_t nchunks, ChunkFn fn, void* ctx);

// Sends the pool's spinning idle workers to sleep now instead of at the end of their spin. Called
// before handing the cores to another library's threads (OpenBLAS's LAPACK runs its BLAS calls
// on OpenMP teams): a worker spinning on one of two cores made cholesky of 512 x 512 3x slower
// on two threads than on one.
void park_idle_workers();

// True on a thread that is running a chunk: a nested parallel_for runs inline.
bool in_parallel_region();

// The number of threads a parallel loop started on this thread may use (1 inside a chunk).
int max_parallel_threads();

}  // namespace ember::detail
