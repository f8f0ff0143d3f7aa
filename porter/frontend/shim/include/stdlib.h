/* cuport light-mode stub: declarations live in cuda_shim.h */
#pragma once
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 2147483647
