// The runtime's entry point for tools: open a compiled plan on a device.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/Status.h"

#include <memory>
#include <string>

namespace genrt {

/// Loads `planPath` (verifying it: a plan is untrusted input) and returns an
/// executor for `device` ("cpu", later "cuda"). On failure returns nullptr
/// and sets `err`.
std::unique_ptr<Decoder> openDecoder(const std::string &planPath, const std::string &device, Status &err);

} // namespace genrt
