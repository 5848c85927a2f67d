// The kernel cache: entries round-trip; keys separate every part; a damaged,
// foreign or misnamed entry is a miss, never code; the folder is trimmed to
// its size, least recently used first; off keeps nothing.
#include "codegen/KernelCache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

using namespace genc;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the test's temporary directory.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("genc-kc-" + std::to_string(std::random_device{}()));
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

CachedCode code(size_t n, char fill) {
  CachedCode c;
  c.cubin.assign(n, fill);
  c.cubin[0] = '\0'; // binary, NULs included
  c.ptx = "// ptx " + std::string(n / 2, fill);
  return c;
}

std::string readAll(const fs::path &p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void writeAll(const fs::path &p, const std::string &s) { std::ofstream(p, std::ios::binary) << s; }

std::vector<fs::path> entries(const fs::path &dir) {
  std::vector<fs::path> out;
  for (auto &e : fs::directory_iterator(dir))
    out.push_back(e.path());
  return out;
}

TEST(KernelCache, StoresAndLoadsAnEntry) {
  TempDir d;
  KernelCache cache(d.path.string());
  const std::string key = KernelCache::keyOf({"src", "sm_90"});
  EXPECT_FALSE(cache.load(key));
  const CachedCode c = code(1000, 'x');
  ASSERT_TRUE(cache.store(key, c));
  auto back = cache.load(key);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->cubin, c.cubin);
  EXPECT_EQ(back->ptx, c.ptx);
  // One file, no temporary left behind.
  EXPECT_EQ(entries(d.path).size(), 1u);
}

TEST(KernelCache, KeysSeparateEveryPart) {
  const std::string k = KernelCache::keyOf({"ab", "c"});
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, KernelCache::keyOf({"ab", "c"}));
  EXPECT_NE(k, KernelCache::keyOf({"a", "bc"})); // the parts do not run together
  EXPECT_NE(k, KernelCache::keyOf({"ab", "d"}));
  EXPECT_NE(k, KernelCache::keyOf({"ab", "c", ""}));
  EXPECT_NE(k, KernelCache::keyOf({"c", "ab"}));
}

TEST(KernelCache, ADamagedEntryIsAMiss) {
  TempDir d;
  KernelCache cache(d.path.string());
  const std::string key = KernelCache::keyOf({"damaged"});
  ASSERT_TRUE(cache.store(key, code(4096, 'y')));
  const fs::path file = entries(d.path).at(0);
  const std::string good = readAll(file);
  // Every single byte flipped, in turn (a sample of positions over the whole file).
  for (size_t at = 0; at < good.size(); at += 97) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    writeAll(file, bad);
    EXPECT_FALSE(cache.load(key)) << "flipped byte " << at;
  }
  // Cut short anywhere, or grown.
  for (size_t n : {size_t(0), size_t(7), size_t(8), good.size() / 2, good.size() - 1}) {
    writeAll(file, good.substr(0, n));
    EXPECT_FALSE(cache.load(key)) << "cut to " << n;
  }
  writeAll(file, good + "z");
  EXPECT_FALSE(cache.load(key));
  // Intact again: a hit; stored anew over a damaged one: a hit.
  writeAll(file, good);
  EXPECT_TRUE(cache.load(key));
  writeAll(file, "junk");
  ASSERT_TRUE(cache.store(key, code(4096, 'y')));
  EXPECT_TRUE(cache.load(key));
}

TEST(KernelCache, AnEntryUnderAnotherNameIsAMiss) {
  TempDir d;
  KernelCache cache(d.path.string());
  const std::string a = KernelCache::keyOf({"a"}), b = KernelCache::keyOf({"b"});
  ASSERT_TRUE(cache.store(a, code(100, 'a')));
  fs::copy_file(d.path / (a + ".kc"), d.path / (b + ".kc"));
  EXPECT_TRUE(cache.load(a));
  EXPECT_FALSE(cache.load(b)); // its key inside is a's
}

TEST(KernelCache, TrimsTheLeastRecentlyUsedFirst) {
  TempDir d;
  const size_t n = 10000; // an entry is a little over 1.5 n bytes
  KernelCache cache(d.path.string(), /*maxBytes=*/4 * n);
  const std::string k1 = KernelCache::keyOf({"1"}), k2 = KernelCache::keyOf({"2"}), k3 = KernelCache::keyOf({"3"});
  ASSERT_TRUE(cache.store(k1, code(n, '1')));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(cache.store(k2, code(n, '2')));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(cache.load(k1)); // used: now newer than k2
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(cache.store(k3, code(n, '3'))); // three do not fit: k2 goes
  EXPECT_TRUE(cache.load(k1));
  EXPECT_FALSE(cache.load(k2));
  EXPECT_TRUE(cache.load(k3));
  EXPECT_EQ(entries(d.path).size(), 2u);
}

TEST(KernelCache, ADeadWritersTemporaryGoesOnceAnHourOld) {
  TempDir d;
  KernelCache cache(d.path.string());
  ASSERT_TRUE(cache.store(KernelCache::keyOf({"first"}), code(10, 'f'))); // makes the folder
  const std::string key = KernelCache::keyOf({"x"});
  const fs::path old = d.path / (key + ".kc.tmp.123.0.7"), fresh = d.path / (key + ".kc.tmp.124.0.8");
  writeAll(old, "half an entry");
  writeAll(fresh, "half an entry");
  fs::last_write_time(old, fs::file_time_type::clock::now() - std::chrono::hours(2));
  ASSERT_TRUE(cache.store(KernelCache::keyOf({"y"}), code(10, 'y'))); // a store trims
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(fs::exists(fresh)); // perhaps a live writer's
}

TEST(KernelCache, OffKeepsNothing) {
  KernelCache off;
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.store(KernelCache::keyOf({"x"}), code(10, 'x')));
  EXPECT_FALSE(off.load(KernelCache::keyOf({"x"})));
}

TEST(KernelCache, AFolderThatCannotBeWrittenIsACacheThatDoesNotKeep) {
  TempDir d;
  writeAll(d.path, "a file where the folder would be");
  KernelCache cache((d.path / "sub").string());
  EXPECT_FALSE(cache.store(KernelCache::keyOf({"x"}), code(10, 'x')));
  EXPECT_FALSE(cache.load(KernelCache::keyOf({"x"})));
  fs::remove(d.path);
}

TEST(KernelCache, TheSettingThenTheEnvironmentThenTheHome) {
  const char *saved[] = {std::getenv("GENC_KERNEL_CACHE"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME")};
  const std::string keep[] = {saved[0] ? saved[0] : "", saved[1] ? saved[1] : "", saved[2] ? saved[2] : ""};
  setenv("GENC_KERNEL_CACHE", "/env/kc", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(KernelCache::fromSetting("/flag").dir(), "/flag");
  EXPECT_FALSE(KernelCache::fromSetting("off").enabled());
  EXPECT_EQ(KernelCache::fromSetting("").dir(), "/env/kc");
  setenv("GENC_KERNEL_CACHE", "off", 1);
  EXPECT_FALSE(KernelCache::fromSetting("").enabled());
  unsetenv("GENC_KERNEL_CACHE");
  EXPECT_EQ(KernelCache::fromSetting("").dir(), "/xdg/genc/kernels");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(KernelCache::fromSetting("").dir(), "/home/u/.cache/genc/kernels");
  unsetenv("HOME");
  EXPECT_FALSE(KernelCache::fromSetting("").enabled());
  const char *names[] = {"GENC_KERNEL_CACHE", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; ++i)
    if (saved[i])
      setenv(names[i], keep[i].c_str(), 1);
}

} // namespace
