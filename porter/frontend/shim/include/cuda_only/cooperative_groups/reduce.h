/* cuport light stub: cg::reduce and its operators are declared in <cooperative_groups.h>'s stub */
#pragma once
#include <cooperative_groups.h>
