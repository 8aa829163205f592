// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
// NVTX through its C API and its C++ API, built with the course's flags for a student's file
// (tests/meson.build's no_nvtx): the object checks must accept it.
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvtx3.hpp>

int work(int x) {
    nvtxRangePushA("work");
    nvtx3::scoped_range range{"inner"};
    nvtxMarkA("halfway");
    int y = x * 2;
    nvtxRangePop();
    return y;
}
