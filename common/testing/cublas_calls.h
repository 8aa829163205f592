// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Which device was current at each cuBLAS call of the code under test. A cuBLAS handle cannot be
// asked which device it belongs to, so a test program that links this file watches the calls:
// it defines cublasCreate_v2, cublasDestroy_v2 and cublasSgemv_v2(_64) itself, notes the device
// current at each call and passes the call on to libcublas. The definitions come into a program
// with cublas_record_of (the linker takes this file's object only for a program that calls it).
#pragma once

#include <cublas_v2.h>

namespace course::testing {

struct CublasHandleRecord {
  int created_on = -1;           // the device current at cublasCreate (-1: not made by cublasCreate)
  int destroyed = 0;             // cublasDestroy calls on it
  int destroyed_on = -1;         // the device current at the last of them
  int gemv_calls = 0;            // cublasSgemv calls with it
  int gemv_on_other_device = 0;  // ... made while another device than created_on was current
};

// What the calls so far did with `handle` (all fields at their defaults if nothing did).
CublasHandleRecord cublas_record_of(cublasHandle_t handle);

}  // namespace course::testing
