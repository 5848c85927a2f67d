// The runtime's entry point for tools: open a compiled plan on a device.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/Executor.h"
#include "runtime/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace genrt {

/// The devices a plan can run on, in the order `auto` prefers them.
struct DeviceChoice {
  std::string name;  // "cuda", "cpu"
  bool usable;       // a GPU is visible (cuda); always (cpu)
  std::string why;   // when not usable: the reason, for the error message
};
std::vector<DeviceChoice> listDevices();

/// "auto" -> the first usable device of listDevices(); a named device that
/// is unknown or unusable here is an error naming the reason.
Status resolveDevice(const std::string &requested, std::string &device);

/// Loads `planPath` (verifying it: a plan is untrusted input) and returns a
/// decoder running it on `device` ("auto", "cpu", "cuda"). On failure
/// returns nullptr and sets `err`.
std::unique_ptr<Decoder> openDecoder(const std::string &planPath, const std::string &device, Status &err,
                                     const ExecutorOptions &opts = {});

} // namespace genrt
