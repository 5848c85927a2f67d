// Symbolic dims live in the runtime (runtime/plan/Dim.h): plans carry shapes as dims.
#pragma once
#include "compiler/ir/DType.h"
#include "runtime/plan/Dim.h"

namespace genc {
using genrt::constantShape;
using genrt::Dim;
using genrt::numElements;
using genrt::Shape;
using genrt::shapeStr;
} // namespace genc
