# lit configuration for genc. Run on the build folder (ctest does):
#   lit -sv build/tests [--filter REGEX]
import os
import shutil
import subprocess

import lit.formats

if not hasattr(config, "genc_bin_dir"):
    lit_config.fatal("run lit on the build's tests folder (ctest does): lit -sv BUILD/tests")

config.name = "genc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".gir", ".test", ".onnxtxt", ".cu"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "Inputs", "fixtures", "unit", "CMakeLists.txt"]
config.test_source_root = os.path.join(config.genc_src_dir, "tests")

config.substitutions.append(("%genc", os.path.join(config.genc_bin_dir, "genc")))
config.substitutions.append(("%genppl", os.path.join(config.genc_bin_dir, "genppl")))
config.substitutions.append(("%tokcheck", os.path.join(config.genc_bin_dir, "genc_tokenizer_check")))
config.substitutions.append(("%rowcheck", os.path.join(config.genc_bin_dir, "genc_row_check")))
config.substitutions.append(("%gpucheck", os.path.join(config.genc_bin_dir, "gpucheck")))
# %genrun_fake before %genrun, which is its prefix.
config.substitutions.append(("%genrun_fake", os.path.join(config.genc_bin_dir, "genrun_fake")))
config.substitutions.append(("%genrun", os.path.join(config.genc_bin_dir, "genrun")))
# The fuzz targets under ReplayMain.cpp (tests/fuzz/CMakeLists.txt): %replay_plan, ...
config.substitutions.append(("%replay_", os.path.join(config.genc_bin_dir, "replay_")))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%fixtures", os.path.join(config.genc_src_dir, "tests", "fixtures")))
config.substitutions.append(("%testtools", os.path.join(config.genc_src_dir, "tests", "tools")))
config.substitutions.append(("%onnx_proto_dir", "/usr/include"))
config.substitutions.append(("FileCheck", config.filecheck))
# %not: like not, but a crash fails the test (tests/tools/not.py).
config.substitutions.append(("%not", config.python + " " + os.path.join(config.genc_src_dir, "tests", "tools", "not.py")))

# genc's kernel cache (codegen/KernelCache.h): one folder in the build tree
# for the whole run (tests that look at the cache give their own), so a
# fixture's kernels are compiled once however many tests compile it, and
# nothing is written under the user's home.
config.environment["GENC_KERNEL_CACHE"] = os.environ.get(
    "GENC_KERNEL_CACHE", os.path.join(config.genc_bin_dir, "..", "tests", "kernel-cache"))

# genc compiles kernels with NVRTC (built with the CUDA toolkit).
if getattr(config, "genc_have_nvrtc", "OFF") in ("ON", "1", "TRUE"):
    config.available_features.add("nvrtc")

# The GGUF converter's tests (tools/gguf_to_onnx.py) and the checks that read
# ONNX files back need Python's onnx and gguf packages (tools/setup.sh
# installs them): `REQUIRES: python-onnx`, `REQUIRES: python-gguf`.
for feature, module in (("python-onnx", "onnx"), ("python-gguf", "gguf")):
    try:
        if subprocess.run([config.python, "-c", "import " + module], capture_output=True, timeout=60).returncode == 0:
            config.available_features.add(feature)
    except Exception:
        pass

# SmolLM2-135M-Instruct's GGUF file (tools/fetch_smollm2.py; tools/setup.sh
# fetches it): the quality tests on the real model say `REQUIRES: smollm2`.
try:
    found = subprocess.run([config.python, os.path.join(config.genc_src_dir, "tools", "fetch_smollm2.py"), "--check"],
                           capture_output=True, text=True, timeout=60)
    if found.returncode == 0:
        config.available_features.add("smollm2")
        config.substitutions.append(("%smollm2_gguf", found.stdout.strip()))
except Exception:
    pass

# The C++ compiler of the build: tests that compile generated kernel code as
# host C++ (tests/tools/emulate_nbits_kernels.py) say `REQUIRES: host-cxx`.
if getattr(config, "cxx", "") and os.path.exists(config.cxx):
    config.available_features.add("host-cxx")
    config.substitutions.append(("%cxx", config.cxx))

# GPU tests say `REQUIRES: cuda`; CI has no GPU and skips them.
try:
    if shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0:
        config.available_features.add("cuda")
except Exception:
    pass
