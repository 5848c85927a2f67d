#include "codegen/CudaVectorize.h"

#include "codegen/CudaSyntax.h"

#include <algorithm>

namespace genc {

int maxVectorWidth(const std::vector<DType> &storage) {
  size_t narrowest = 0;
  for (DType t : storage)
    if (isFloat(t))
      narrowest = narrowest ? std::min(narrowest, dtypeSize(t)) : dtypeSize(t);
  return static_cast<int>(16 / (narrowest ? narrowest : 4));
}

int vectorWidth(const Dim &n, int maxWidth) {
  if (!n.isConstant() || n.constant() <= 0)
    return 1;
  int w = maxWidth;
  while (w > 1 && n.constant() % w)
    w /= 2;
  return w;
}

std::string vectorLoadText(const Lanes &ln, const std::string &type, const std::string &arr,
                           const std::string &ptr) {
  return ln.indent + "alignas(16) " + type + " " + arr + "[" + std::to_string(ln.width) + "];\n" +
         ln.indent + "genc_vload(" + arr + ", " + ptr + ");\n";
}

std::string laneLoopText(const Lanes &ln, const std::string &indent, const std::string &body) {
  std::string j = mentions(body, ln.j) ? indent + "  const long long " + ln.j + " = " + ln.j0 + " + " +
                                             ln.lane + ";\n"
                                       : "";
  return indent + "#pragma unroll\n" + indent + "for (int " + ln.lane + " = 0; " + ln.lane + " < " +
         std::to_string(ln.width) + "; ++" + ln.lane + ") {\n" + j + body + indent + "}\n";
}

} // namespace genc
