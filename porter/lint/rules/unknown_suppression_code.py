"""A suppression comment names a code cuport does not know.

## What it does
Flags codes in suppression comments that are not in the rule table, naming the closest valid code.

## Why is this bad?
A typo such as `CP1O2` suppresses nothing, so the finding it was meant to silence stays, or worse, the intended
code was renamed and the comment is dead.

## Example
```cuda
int lane = threadIdx.x % 32;  // noqa: CP1O2
```

## Use instead
```cuda
int lane = threadIdx.x % 32;  // noqa: CP102
```

## Fix safety
No fix.

## References
- ruff RUF100 / RUF102 (invalid noqa codes).
"""
CODE = "CP002"


def check(ctx):  # produced by the suppression pass
    return None
