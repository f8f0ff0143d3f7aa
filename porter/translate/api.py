"""The one entry point every consumer (CLI, verify, tests) translates through:

    from porter.translate.api import translate_file
    res = translate_file("saxpy.cu", "hip", launch_syntax="hip")

Targets register below as "module:function"; the module is imported only when its target is asked for, so
`cuport lint` never pays for a translator. A target function takes (path, text=None, **options) and returns a
TranslationResult."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

TARGETS: dict[str, str] = {
    "hip": "porter.translate.hip.translator:translate",
    "glsl": "porter.translate.kernel.glsl:translate",
    "opencl": "porter.translate.kernel.opencl:translate",
}


@dataclass
class TranslationResult:
    path: str
    target: str
    text: str = ""                                   # hip / opencl: the whole translated file; glsl: ""
    shaders: dict = field(default_factory=dict)      # glsl: {kernel: source}
    manifests: dict = field(default_factory=dict)    # glsl / opencl: {kernel: manifest dict}
    diagnostics: list = field(default_factory=list)  # porter.diagnostics.Diagnostic
    failed_kernels: dict = field(default_factory=dict)   # {kernel: reason}
    stats: object | None = None                      # porter.translate.hip.stats.FileStats (hip)
    includes: list = field(default_factory=list)     # project headers the file includes (resolved paths)
    extra: dict = field(default_factory=dict)

    @property
    def parse_errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.code == "CP000")


class UnknownTarget(ValueError):
    pass


def target_function(target: str):
    spec = TARGETS.get(target)
    if spec is None:
        raise UnknownTarget(f"unknown translation target '{target}' (known: {', '.join(sorted(TARGETS))})")
    mod, _, fn = spec.partition(":")
    return getattr(importlib.import_module(mod), fn)


def translate_file(path: str, target: str, **options) -> TranslationResult:
    """Translate the file at `path` (or `text=` given as its contents) for `target`."""
    return target_function(target)(path, **options)
