/* cuport light-mode stub: declarations live in cuda_shim.h */
#pragma once
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
