// The step kernel's fixed device code (codegen/StepKernel.cpp generates the
// rest): block coordinates for the attention routines, the weight ring of
// bulk copies, the pages' matrix-vector product, the bounded waits.
#pragma once

namespace genc {

const char *stepKernelTemplates();

} // namespace genc
