#include "tools/GenrunServe.h"

#include "runtime/Env.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace genrun {

// Runs in the interpreter: a missing package or server dependency is one
// line naming what to install, never a traceback.
static const char *const kBoot =
    "import sys\n"
    "try:\n"
    "    import genc.serve\n"
    "except ImportError as e:\n"
    "    sys.stderr.write('genrun serve: error: the Python package genc is not importable (%s); install it "
    "(tools/build.sh) or set PYTHONPATH\\n' % e)\n"
    "    sys.exit(1)\n"
    "sys.argv[0] = 'genrun serve'\n"
    "sys.exit(genc.serve.main(sys.argv[1:]))\n";

static bool isDir(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

int execServe(int argc, char **argv) {
  const char *py = genrt::env::get("GENC_PYTHON");
  const std::string python = py && *py ? py : "python3";
  // A build tree: genrun in BUILD/tools, the staged package in BUILD/python.
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    const std::string stage = dir + "/../python";
    if (isDir(stage + "/genc")) {
      const char *old = std::getenv("PYTHONPATH");
      std::string path = stage + (old && *old ? ":" + std::string(old) : "");
      ::setenv("PYTHONPATH", path.c_str(), 1);
    }
  }
  std::vector<char *> args;
  args.push_back(const_cast<char *>(python.c_str()));
  args.push_back(const_cast<char *>("-c"));
  args.push_back(const_cast<char *>(kBoot));
  for (int i = 2; i < argc; ++i)
    args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execvp(python.c_str(), args.data());
  std::fprintf(stderr, "genrun serve: error: cannot run %s: %s (the server runs on Python 3 with the genc "
                       "package; set GENC_PYTHON to another interpreter)\n",
               python.c_str(), std::strerror(errno));
  return 1;
}

} // namespace genrun
