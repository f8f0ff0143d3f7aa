"""The AST-based kernel translators (GLSL compute, OpenCL C): the driver runs the emitter once per kernel over
the model; the emitter (emitter.py with typeinfo, statements, expressions, pointers, calls) asks a Target (target.py)
how to spell each construct; glsl.py and opencl.py are the two targets, intrinsics.py their table of device
functions (rules/kernel/intrinsics.csv)."""
