// fplab._core's bindings of the forward pass's kernels for fplab.torch
// (python/torch_kernels.cpp says what each computes).
#pragma once

#include <pybind11/pybind11.h>

void bind_torch_kernels(pybind11::module_& m);
