// torch.profiler.profile's driver: the schedule function and the action transitions of
// start()/step()/stop(). Warmup runs a real session whose events are thrown away when recording
// starts, so the first recorded step does not pay the tracer's start-up.
#include "ember/core/errors.h"
#include "ember/profiler.h"

namespace ember::profiler {

Schedule schedule(int64_t wait, int64_t warmup, int64_t active, int64_t repeat, int64_t skip_first,
                  int64_t skip_first_wait) {
  EMBER_CHECK_VALUE(wait >= 0 && warmup >= 0 && active > 0 && repeat >= 0 && skip_first >= 0,
                    "schedule(): invalid arguments: wait=", wait, ", warmup=", warmup, ", active=", active,
                    ", repeat=", repeat, ", skip_first=", skip_first,
                    " (wait, warmup, repeat and skip_first must be >= 0 and active > 0)");
  return [=](int64_t step) {
    EMBER_CHECK_VALUE(step >= 0, "schedule(): step must be non-negative, got ", step);
    if (step < skip_first) return ProfilerAction::None;
    step -= skip_first;
    if (skip_first_wait != 0) step += wait;
    const int64_t cycle = wait + warmup + active;
    if (repeat > 0 && step / cycle >= repeat) return ProfilerAction::None;
    const int64_t k = step % cycle;
    if (k < wait) return ProfilerAction::None;
    if (k < wait + warmup) return ProfilerAction::Warmup;
    return k < cycle - 1 ? ProfilerAction::Record : ProfilerAction::RecordAndSave;
  };
}

Profiler::Profiler(ProfilerConfig config, Schedule schedule, std::function<void(Profiler&)> on_trace_ready)
    : config_(config), schedule_(std::move(schedule)), on_trace_ready_(std::move(on_trace_ready)) {}

Profiler::~Profiler() {
  if (!running_) return;
  try {
    stop();
  } catch (...) {
    // A destructor must not throw; the session is closed either way.
  }
}

const ProfilerResult& Profiler::result() const {
  EMBER_CHECK(result_, "profiler: no results yet (the profiler has not finished a recording; call stop() first, "
                       "or step() through a schedule's active steps)");
  return *result_;
}

void Profiler::finish_recording(bool save) {
  if (step_event_ >= 0) {
    record_function_exit(step_event_);
    step_event_ = -1;
  }
  auto r = disable_profiler();
  collecting_ = false;
  if (save) {
    result_ = std::move(r);
    if (on_trace_ready_) on_trace_ready_(*this);
  }
}

// The actions torch's profile takes between two schedule states (None = the end of profiling).
void Profiler::transition(ProfilerAction from, ProfilerAction to) {
  using A = ProfilerAction;
  auto prepare = [&] {  // warmup or recording: a session runs
    if (!collecting_) {
      enable_profiler(config_);
      collecting_ = true;
    }
  };
  auto start_recording = [&] {  // drop what warmup collected, start clean
    if (collecting_) finish_recording(false);
    prepare();
  };
  const bool recording_from = from == A::Record || from == A::RecordAndSave;
  const bool recording_to = to == A::Record || to == A::RecordAndSave;
  if (from == A::RecordAndSave) {
    finish_recording(true);
    if (to == A::Warmup) prepare();
    else if (recording_to) prepare();
    return;
  }
  if (from == A::None) {
    if (to != A::None) prepare();
    return;
  }
  if (from == A::Warmup) {
    if (recording_to) start_recording();
    else if (to == A::None) finish_recording(false);  // torch warns: warmup not followed by recording
    return;
  }
  if (recording_from) {  // Record
    if (to == A::None || to == A::Warmup) {
      finish_recording(true);
      if (to == A::Warmup) prepare();
    }
  }
}

void Profiler::start() {
  EMBER_CHECK(!running_, "profiler: start() called twice without stop()");
  running_ = true;
  action_ = schedule_ ? schedule_(step_num_) : ProfilerAction::Record;
  transition(ProfilerAction::None, action_);
  if (schedule_ && collecting_) step_event_ = record_function_enter("ProfilerStep#" + std::to_string(step_num_));
}

void Profiler::step() {
  EMBER_CHECK(running_, "profiler: step() called outside start()/stop()");
  if (step_event_ >= 0) {
    record_function_exit(step_event_);
    step_event_ = -1;
  }
  ProfilerAction previous = action_;
  ++step_num_;
  action_ = schedule_ ? schedule_(step_num_) : ProfilerAction::Record;
  transition(previous, action_);
  if (schedule_ && collecting_) step_event_ = record_function_enter("ProfilerStep#" + std::to_string(step_num_));
}

void Profiler::stop() {
  EMBER_CHECK(running_, "profiler: stop() called without start()");
  running_ = false;
  if (collecting_) {
    // A warmup that never reached recording is dropped; a recording is saved.
    finish_recording(action_ == ProfilerAction::Record || action_ == ProfilerAction::RecordAndSave);
  }
  action_ = ProfilerAction::None;
}

}  // namespace ember::profiler
