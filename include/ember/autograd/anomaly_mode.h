#pragma once
// Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly): while enabled with
// check_nan, the engine checks every gradient a backward node returns and stops at the first
// node that produced a NaN, naming it ("Function 'DivBackward0' returned nan values in its 0th
// output."), instead of letting the NaN spread to every parameter.
namespace ember::autograd {

// Process-wide, as torch's flag.
void set_anomaly_mode(bool enabled, bool check_nan = true);
bool anomaly_mode_enabled();
bool anomaly_check_nan();

}  // namespace ember::autograd
