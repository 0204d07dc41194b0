#pragma once
// torch.set_flush_denormal: with it on, float arithmetic on this CPU treats denormal inputs as
// zero and flushes denormal results to zero (x86's DAZ and FTZ bits), which keeps math on tiny
// values off the CPU's slow microcode path. Process-wide here: the calling thread and every
// worker of ember's thread pool (before its next chunk), so a parallel op's result never depends
// on which thread ran which chunk. Returns false, changing nothing, where the CPU has no such mode.
namespace ember {

bool set_flush_denormal(bool on);

}  // namespace ember
