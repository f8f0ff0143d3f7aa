/* cuport light-mode stub: declarations live in cuda_shim.h */
#pragma once
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define M_PI 3.14159265358979323846
