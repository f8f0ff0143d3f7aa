"""CUDA -> HIP by edits on the parsed source: tables (rules/hip/*.csv), handlers, the translator and its passes
(includes, rewrites), statistics, the docs page and the command line. The entry point is translator.translate."""
