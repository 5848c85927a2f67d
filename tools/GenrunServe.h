// `genrun serve MODEL.plan [options]`: the OpenAI-compatible server. Its HTTP
// layer is Python (the genc package's genc.serve, over the same runtime and
// its C++ scheduler: docs/serving.md), so genrun hands the process over to
// python3 with the same options.
#pragma once

namespace genrun {

/// Replaces the process with `python3 -m genc.serve ARGS` (argv[2..]); the
/// interpreter is $GENC_PYTHON or python3, and a build tree's staged package
/// (../python beside genrun) is found first. Returns only on failure, with
/// exit status 1 after a one-line error.
int execServe(int argc, char **argv);

} // namespace genrun
