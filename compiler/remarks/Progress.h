// Where a long compile is, on stderr: genc compile turns it on when stderr
// is a terminal (or with --progress), --quiet turns it off. One status line,
// redrawn in place (at most ~10 times a second), for the step under way
// ("import: weights 1.2/4.0 GiB", "nvrtc: kernels 104/208"), and one line
// per finished phase or pass with its time. Off, every call is a no-op, so
// libraries report unconditionally. Single-threaded, like the compiler.
#pragma once
#include <cstdint>
#include <string>

namespace genc {
namespace progress {

void enable(bool on);
bool enabled();

/// The status line: a phase or pass has begun ("genc: fuse ...").
void begin(const std::string &what);
/// The status line: `what` at done/total, as bytes (KiB/MiB/GiB) or a count.
void update(const std::string &what, uint64_t done, uint64_t total, bool bytes);
/// A finished phase or pass, with its wall time, on its own line.
void finished(const std::string &name, double seconds);

} // namespace progress
} // namespace genc
