#include "codegen/KernelCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"
#include "runtime/Env.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

namespace genc {
namespace fs = std::filesystem;

// An entry: magic, then key, cubin and PTX each as (u64 length, bytes), then
// the xxHash64 of everything before it. Little-endian lengths (the machines
// that run genc are).
static constexpr char kMagic[8] = {'G', 'E', 'N', 'C', 'K', 'C', '0', '1'};
static constexpr const char *kSuffix = ".kc";

KernelCache KernelCache::fromSetting(const std::string &setting) {
  std::string dir = setting;
  if (dir.empty())
    if (const char *e = genrt::env::get("GENC_KERNEL_CACHE"))
      dir = e;
  if (dir.empty()) {
    if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
      dir = std::string(x) + "/genc/kernels";
    else if (const char *h = std::getenv("HOME"); h && *h)
      dir = std::string(h) + "/.cache/genc/kernels";
  }
  if (dir == "off")
    dir.clear();
  return KernelCache(dir);
}

std::string KernelCache::keyOf(const std::vector<std::string> &parts) {
  llvm::SHA256 sha;
  for (const std::string &p : parts) {
    const uint64_t n = p.size();
    sha.update(llvm::StringRef(reinterpret_cast<const char *>(&n), sizeof n));
    sha.update(p);
  }
  return llvm::toHex(sha.final(), /*LowerCase=*/true);
}

std::string KernelCache::pathOf(const std::string &key) const { return dir_ + "/" + key + kSuffix; }

static void putBlock(std::string &out, const std::string &bytes) {
  const uint64_t n = bytes.size();
  out.append(reinterpret_cast<const char *>(&n), sizeof n);
  out += bytes;
}

// Reads a (u64 length, bytes) block at `at`; false if it runs past `end`.
static bool getBlock(const std::string &in, size_t &at, size_t end, std::string &out) {
  uint64_t n = 0;
  if (end - at < sizeof n)
    return false;
  std::memcpy(&n, in.data() + at, sizeof n);
  at += sizeof n;
  if (n > end - at)
    return false;
  out.assign(in, at, n);
  at += n;
  return true;
}

std::optional<CachedCode> KernelCache::load(const std::string &key) const {
  if (!enabled())
    return std::nullopt;
  const std::string path = pathOf(key);
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string in = ss.str();
  const size_t tail = sizeof(uint64_t);
  if (in.size() < sizeof kMagic + tail || std::memcmp(in.data(), kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  const size_t end = in.size() - tail;
  uint64_t sum = 0;
  std::memcpy(&sum, in.data() + end, tail);
  if (sum != llvm::xxHash64(llvm::StringRef(in.data(), end)))
    return std::nullopt;
  size_t at = sizeof kMagic;
  std::string storedKey;
  CachedCode code;
  if (!getBlock(in, at, end, storedKey) || storedKey != key || !getBlock(in, at, end, code.cubin) ||
      !getBlock(in, at, end, code.ptx) || at != end)
    return std::nullopt;
  std::error_code ec; // used now: the last to be trimmed
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
  return code;
}

bool KernelCache::store(const std::string &key, const CachedCode &code) const {
  if (!enabled())
    return false;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string out(kMagic, sizeof kMagic);
  putBlock(out, key);
  putBlock(out, code.cubin);
  putBlock(out, code.ptx);
  const uint64_t sum = llvm::xxHash64(llvm::StringRef(out));
  out.append(reinterpret_cast<const char *>(&sum), sizeof sum);
  // A name no other writer picks: this process, this call, a random word.
  static std::atomic<uint64_t> calls{0};
  const std::string tmp = pathOf(key) + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(calls++) + "." + std::to_string(std::random_device{}());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f || !f.write(out.data(), static_cast<std::streamsize>(out.size())) || !f.flush()) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, pathOf(key), ec);
  if (ec) {
    fs::remove(tmp, ec);
    return false;
  }
  trim();
  return true;
}

void KernelCache::trim() const {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    // A writer that died between writing and renaming left its temporary:
    // gone once an hour old (a live writer renames within seconds).
    if (it->path().filename().string().find(std::string(kSuffix) + ".tmp.") != std::string::npos) {
      std::error_code e;
      if (now - it->last_write_time(e) > std::chrono::hours(1) && !e)
        fs::remove(it->path(), e);
      continue;
    }
    if (it->path().extension() != kSuffix)
      continue;
    std::error_code e1, e2;
    const uint64_t bytes = it->file_size(e1);
    const fs::file_time_type used = it->last_write_time(e2);
    if (e1 || e2)
      continue;
    entries.push_back({it->path(), used, bytes});
    total += bytes;
  }
  if (total <= maxBytes_)
    return;
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) { return a.used < b.used; });
  for (const Entry &e : entries) {
    if (total <= maxBytes_)
      break;
    if (fs::remove(e.path, ec))
      total -= e.bytes;
  }
}

} // namespace genc
