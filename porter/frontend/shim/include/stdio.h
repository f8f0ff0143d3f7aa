/* cuport light-mode stub: declarations live in cuda_shim.h */
#pragma once
typedef struct _FILE FILE; extern "C" FILE *stderr; extern "C" FILE *stdout;
