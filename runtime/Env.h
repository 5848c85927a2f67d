// Every GENC_* environment variable genc and genrun read, in one table: its
// name, where it acts (genc at compile time, or genrun), and what it does.
// The code reads them only through env::get (tests/tools/env-variables.test
// checks the sources: no other getenv of a GENC_* name, no name read that
// the table lacks, no name in the table that nothing reads), and
// `genrun --help-env` prints the table. Most are switches for A/B runs and
// diagnostics on the GPU machine (docs/cuda.md, docs/performance.md); a few
// are settings a user may want (GENC_KERNEL_CACHE, GENC_NCCL_LIB, ...). The
// CUDA executor's are all read in one place, runtime/cuda/CudaOptions.cpp,
// when an executor is made.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

namespace genrt::env {

struct Variable {
  const char *name;
  const char *reader; // "genc" (read while compiling) or "genrun"
  const char *what;   // the values it takes and what they do
};

/// The table, in name order.
const std::vector<Variable> &variables();

/// std::getenv(name) for a name in the table (nullptr when unset).
const char *get(const char *name);

/// Whether `name` is set to exactly `value`.
bool is(const char *name, const char *value);

/// `name`'s value where it is one of `allowed` (as a decimal), else `fallback`.
int choice(const char *name, std::initializer_list<int> allowed, int fallback);

/// The GENC_CPU_* and GENC_CUDA_* names in `envp` ("NAME=value" strings,
/// null-terminated) that the table lacks: those prefixes are the executors'
/// alone, so such a name is a misspelling that would otherwise change
/// nothing, silently (an A/B run that set GENC_CUDA_GEMV_MMA_ROWS measured
/// one path twice, 2026-12-08).
std::vector<std::string> unknownExecutorVariables(char **envp);

} // namespace genrt::env
