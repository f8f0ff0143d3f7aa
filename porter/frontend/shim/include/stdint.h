/* cuport light-mode stub: declarations live in cuda_shim.h */
#pragma once
#ifdef __cplusplus
#include <type_traits>  /* libstdc++'s math.h/stdint.h wrappers bring it in transitively */
#endif
#define INT8_C(c) c
#define INT16_C(c) c
#define INT32_C(c) c
#define INT64_C(c) c##LL
#define UINT8_C(c) c
#define UINT16_C(c) c
#define UINT32_C(c) c##U
#define UINT64_C(c) c##ULL
