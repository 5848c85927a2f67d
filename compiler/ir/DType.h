// The element types live in the runtime (runtime/DType.h); the compiler uses them as is.
#pragma once
#include "runtime/DType.h"

namespace genc {
using genrt::DType;
using genrt::dtypeName;
using genrt::dtypeSize;
using genrt::isFloat;
using genrt::isInteger;
using genrt::parseDType;
} // namespace genc
