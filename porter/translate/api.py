"""The one entry point every consumer (CLI, verify, tests) translates through:

    from porter.translate.api import translate_file
    res = translate_file("saxpy.cu", "hip", launch_syntax="hip")

TARGETS below is the one list of translation targets: the CLI's `--to` choices and its dispatch, verify, report
and report_html read it. Each names its translate function as "module:function"; the module is imported only
when its target is asked for, so `cuport lint` never pays for a translator. A target function takes
(path, text=None, **options) and returns a TranslationResult. Adding a target: a Target subclass
(porter.translate.kernel.target) and an entry here (docs/architecture.md, "How to add a target")."""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TargetInfo:
    name: str
    entry: str                   # "module:function" taking (path, text=None, **options) -> TranslationResult
    cli: str                     # the module whose add_arguments(parser) / main(args) serve `translate --to NAME`
    title: str                   # how reports name it
    kernel: bool = True          # an AST kernel translator: the case's -D defines specialise its output
    per_kernel: bool = False     # one output per kernel (TranslationResult.shaders) instead of one file (.text)


TARGETS: dict[str, TargetInfo] = {t.name: t for t in (
    TargetInfo("hip", "porter.translate.hip.translator:translate", "porter.translate.hip.cli", "HIP", kernel=False),
    TargetInfo("glsl", "porter.translate.kernel.glsl:translate", "porter.translate.kernel.cli", "Vulkan GLSL",
               per_kernel=True),
    TargetInfo("opencl", "porter.translate.kernel.opencl:translate", "porter.translate.kernel.cli", "OpenCL C"),
)}


def target_names() -> tuple[str, ...]:
    """The translation targets, in the order the CLI and the reports list them."""
    return tuple(TARGETS)


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
    info = TARGETS.get(target)
    if info is None:
        raise UnknownTarget(f"unknown translation target '{target}' (known: {', '.join(sorted(TARGETS))})")
    mod, _, fn = info.entry.partition(":")
    return getattr(importlib.import_module(mod), fn)


def translate_file(path: str, target: str, **options) -> TranslationResult:
    """Translate the file at `path` (or `text=` given as its contents) for `target`."""
    return target_function(target)(path, **options)


def failed_translation(path: str, target: str, message: str):
    """The TranslationResult of a file the translator gave up on: one CP000, refused (nothing is written)."""
    from porter import isolate
    stats = None
    if target == "hip":
        from porter.translate.hip.stats import FileStats
        stats = FileStats(path, parse_errors=1)
    return TranslationResult(path, target, diagnostics=[isolate.diagnostic(path, message)], stats=stats,
                             extra={"refused": message, "gave_up": message})


def translate_isolated(fn, path: str, target: str, limits, args=(), kwargs=None, text: str | None = None):
    """fn(*args, **kwargs) -> TranslationResult (fn and its arguments picklable) on the long-lived supervised
    worker (call_job), after the macro pre-check on `text`; a crash, a limit or the pre-check gives
    failed_translation(...)."""
    from porter import isolate
    bomb = isolate.check_expansion(text, limits.memory_mib) if text is not None else None
    if bomb:
        return failed_translation(path, target, bomb)
    isolate.preload()
    res = isolate.call_job(fn, tuple(args), dict(kwargs or {}), limits, os.path.basename(path),
                           len(text) if text is not None else isolate.file_size(path))
    return failed_translation(path, target, res.message) if isinstance(res, isolate.Failure) else res
