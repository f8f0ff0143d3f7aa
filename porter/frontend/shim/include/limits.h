/* cuport light-mode stub: declarations live in cuda_shim.h */
#pragma once
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX 4294967295U
