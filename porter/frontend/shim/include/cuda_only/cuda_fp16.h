/* cuport light-mode stub: declarations live in cuda_shim.h */
#pragma once
