#include "compiler/remarks/Progress.h"

#include <chrono>
#include <cstdio>

namespace genc {
namespace progress {

namespace {
bool on = false;
bool lineOpen = false; // a status line is on screen, to be overwritten
std::chrono::steady_clock::time_point lastDraw;
std::string lastWhat;

std::string amount(uint64_t n, bool bytes) {
  if (!bytes)
    return std::to_string(n);
  char buf[32];
  if (n >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(1ull << 30));
  else if (n >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(n) / double(1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(n) / 1024.0);
  return buf;
}

// Back to the start of the line and clear it (a terminal's CR + EL).
void clearLine() {
  if (lineOpen)
    std::fputs("\r\033[K", stderr);
  lineOpen = false;
}
} // namespace

void enable(bool v) { on = v; }
bool enabled() { return on; }

static void draw(const std::string &what, const std::string &text) {
  lastDraw = std::chrono::steady_clock::now();
  lastWhat = what;
  clearLine();
  std::fprintf(stderr, "genc: %s%s", what.c_str(), text.c_str());
  std::fflush(stderr);
  lineOpen = true;
}

void begin(const std::string &what) {
  if (on)
    draw(what, " ...");
}

void update(const std::string &what, uint64_t done, uint64_t total, bool bytes) {
  if (!on)
    return;
  // Redraw at most every 100 ms, but always show a new step's first state and its last.
  bool throttled = std::chrono::steady_clock::now() - lastDraw < std::chrono::milliseconds(100);
  if (lineOpen && what == lastWhat && done < total && throttled)
    return;
  draw(what, " " + amount(done, bytes) + "/" + amount(total, bytes));
}

void finished(const std::string &name, double seconds) {
  if (!on)
    return;
  clearLine();
  std::fprintf(stderr, "genc: %-22s %8.3f s\n", name.c_str(), seconds);
  std::fflush(stderr);
}

} // namespace progress
} // namespace genc
