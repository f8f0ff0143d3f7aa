"""A suppression comment that silences nothing.

## What it does
Flags `// cuport: ignore[...]`, `// noqa: ...`, `disable`/`enable` and `file-ignore` comments whose codes did not
suppress any diagnostic.

## Why is this bad?
Stale suppressions hide future regressions of the same rule on that line and make reviews noisier.

## Example
```cuda
int lane = threadIdx.x % warpSize;  // noqa: CP102
```

## Use instead
```cuda
int lane = threadIdx.x % warpSize;
```

## Fix safety
Safe: removes the unused code, or the whole comment when no code is left.

## References
- ruff RUF100 (unused-noqa).
"""
CODE = "CP001"


def check(ctx):  # produced by the suppression pass
    return None
