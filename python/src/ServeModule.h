// The parts of the native module genc._genc that Module.cpp and
// ServeModule.cpp share.
#pragma once
#include "runtime/json/Json.h"

#include <pybind11/pybind11.h>

namespace genpy {

/// A JSON value of the plan (the model's generation defaults) as Python data.
pybind11::object jsonToPython(const genrt::json::Value &v);
/// Adds _ServeEngine (the server's engine: ServeEngine.h) to the module.
void bindServe(pybind11::module &m);

} // namespace genpy
