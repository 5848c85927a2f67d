// The steps' CUDA graphs (CudaGraphs.h): capture, instantiation, replay.
#include "runtime/cuda/CudaGraphs.h"

namespace genrt::cuda {

Status GraphCache::replayOrCapture(const std::vector<int64_t> &key, CUstream stream, const std::function<Status()> &enqueue) {
  const DriverApi &a = *dev_.api;
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    if (Status s = dev_.check(a.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                              "cuStreamBeginCapture");
        !s)
      return s;
    Status s = enqueue();
    CUgraph graph = nullptr;
    Status e = dev_.check(a.cuStreamEndCapture(stream, &graph), "capturing a step");
    if (!s)
      return s;
    if (!e)
      return e;
    CUgraphExec exec = nullptr;
    Status i = dev_.check(a.cuGraphInstantiate(&exec, graph, 0), "instantiating a step's graph");
    a.cuGraphDestroy(graph);
    if (!i)
      return i;
    it = graphs_.emplace(key, exec).first;
  }
  return dev_.check(a.cuGraphLaunch(it->second, stream), "launching a step's graph");
}

void GraphCache::clear() {
  for (auto &[key, g] : graphs_)
    if (g)
      dev_.api->cuGraphExecDestroy(g);
  graphs_.clear();
}

} // namespace genrt::cuda
