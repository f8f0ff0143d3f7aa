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
/* the limits of the exact-width types (<stdint.h> 7.20.2) */
#define INT8_MAX 127
#define INT8_MIN (-INT8_MAX - 1)
#define INT16_MAX 32767
#define INT16_MIN (-INT16_MAX - 1)
#define INT32_MAX 2147483647
#define INT32_MIN (-INT32_MAX - 1)
#define INT64_MAX 9223372036854775807LL
#define INT64_MIN (-INT64_MAX - 1)
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
#define UINT64_MAX 18446744073709551615ULL
#define SIZE_MAX UINT64_MAX
