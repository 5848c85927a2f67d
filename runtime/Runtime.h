// The runtime's entry point for tools: open a compiled plan on a device.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/Executor.h"
#include "runtime/Status.h"
#include "runtime/text/Tokenizer.h"

#include <map>
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

/// A plan opened for generation: a decoder running it on a device, and the
/// tokenizer it carries (null where it carries none).
struct OpenedPlan {
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<text::Tokenizer> tokenizer;
  /// Its chat templates and special tokens (Plan::chatTemplates, specialTokens).
  std::map<std::string, std::string> chatTemplates, specialTokens;
};

/// Reads `planPath` once (verifying it: a plan is untrusted input), builds
/// its tokenizer and opens a decoder on `device` ("auto", "cpu", "cuda").
/// On failure `out` is empty.
Status openPlan(const std::string &planPath, const std::string &device, OpenedPlan &out,
                const ExecutorOptions &opts = {});

} // namespace genrt
