// An on-disk cache of NVRTC's output (a cubin and its PTX per source and
// architecture), keyed by everything that decides that output: the source,
// the architecture, the options and the NVRTC build.
//
// Why: NVRTC's code is not byte-stable from one process to the next (on a
// loaded machine about one compile of t5's module in 12 to 30 numbers its
// PTX registers differently, one architecture or two, in parallel or not),
// so two compiles of one model gave plans that differ in their code. With
// the cache a machine compiles a source once and every later plan carries
// the same bytes (`genc inspect --print-profile` + `--profile` rebuild a
// plan byte for byte), and a recompile of an unchanged model (another
// --max-batch, say) skips NVRTC, most of compile time.
//
// An entry is one file, written to a temporary name and renamed, so that
// processes sharing the folder never read half an entry; a file that fails
// its checks (magic, key, sizes, checksum) is a miss and is replaced. Past
// `maxBytes` in all, the least recently used entries go, and so does a
// temporary an hour old (its writer died before the rename).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace genc {

struct CachedCode {
  std::string cubin, ptx;
};

class KernelCache {
public:
  static constexpr uint64_t kDefaultMaxBytes = 2ull << 30;

  /// Off (every lookup misses, nothing is written) when `dir` is empty.
  explicit KernelCache(std::string dir = {}, uint64_t maxBytes = kDefaultMaxBytes)
      : dir_(std::move(dir)), maxBytes_(maxBytes) {}

  /// The folder genc uses: `setting` (--kernel-cache) if given, else
  /// $GENC_KERNEL_CACHE, else $XDG_CACHE_HOME/genc/kernels, else
  /// $HOME/.cache/genc/kernels; "off" (either way) or no home: none.
  static KernelCache fromSetting(const std::string &setting);

  bool enabled() const { return !dir_.empty(); }
  const std::string &dir() const { return dir_; }

  /// The key of one compile: a SHA-256 over a length-prefixed list of the
  /// parts (so no two lists run together into one string).
  static std::string keyOf(const std::vector<std::string> &parts);

  /// The entry under `key`, if one is there and intact.
  std::optional<CachedCode> load(const std::string &key) const;
  /// Stores an entry (best effort: a folder that cannot be written is a
  /// cache that does not keep, never an error), then trims the folder to
  /// maxBytes. Returns whether the entry was written.
  bool store(const std::string &key, const CachedCode &code) const;

private:
  std::string pathOf(const std::string &key) const;
  void trim() const;

  std::string dir_;
  uint64_t maxBytes_;
};

} // namespace genc
