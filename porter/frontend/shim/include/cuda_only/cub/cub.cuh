/* cuport light-mode stub: the namespace exists (`using namespace cub;` parses); its templates are not modelled */
#pragma once
namespace cub {}
