"""Host expressions as size expressions of the spec notation (derive.py): constants, host variables as size
names (1000 / 256 when the program decides them at run time, with a note), launch shapes, dim3 variables,
buffer lengths from `cudaMalloc(&p, bytes)`, inputs zeroed by `cudaMemset`.

One home per question; this file gathers what derive.py and the tests use. The homes import one way, top first:
- derive_expr.py: _Sym, which writes a host expression in the notation over size names;
- derive_alloc.py: buffer lengths (cudaMalloc, a helper that allocates, an offset, cudaMemset);
- derive_launch.py: grid and block of a launch site, the block folded through wrappers, an unreached launch;
- derive_facts.py: what the program fixes (refusals, constant fields, its own round-up helpers, lost writes);
- derive_values.py: the value a host variable holds where the launch reads it;
- derive_host.py: what they share (_bare, Underivable / Unknown, the run-time guesses, _tidy).
"""
from __future__ import annotations

from porter.verify.derive_alloc import _allocation, _elements, _offset_buffer, _past_offset, _zeroed
from porter.verify.derive_expr import _Sym
from porter.verify.derive_facts import _computed, _lost_write, _run_time_value
from porter.verify.derive_host import (HEURISTIC_BLOCK, HEURISTIC_SIZE, Underivable, Unknown, _bare, _expressible,
                                       _has_var_refs, _tidy)
from porter.verify.derive_launch import (_dims_text, _grid_text, _mark_inline, _through_wrappers, _unreached,
                                         _wrapper_block)
from porter.verify.derive_values import _at_launch, _bind_cases, _first_launch_note, _loop_start, _read_back

__all__ = ["HEURISTIC_BLOCK", "HEURISTIC_SIZE", "Underivable", "Unknown", "_allocation", "_at_launch", "_bare",
           "_bind_cases", "_computed", "_dims_text", "_elements", "_expressible", "_first_launch_note", "_grid_text",
           "_has_var_refs", "_loop_start", "_lost_write", "_mark_inline", "_offset_buffer", "_past_offset",
           "_read_back", "_run_time_value", "_Sym", "_through_wrappers", "_tidy", "_unreached", "_wrapper_block",
           "_zeroed"]
