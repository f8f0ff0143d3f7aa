"""Device asserts as an outcome verify compares (translate/kernel/asserts.py makes them observable).

Every backend reports it under the output KEY: the translations' hidden buffer read back after the launch
([0] threads whose assert failed, [1] the source line of the first failure), the CUDA original [UNKNOWN, UNKNOWN]
when the launch ended in cudaErrorAssert ("device-side assert triggered": the context is dead, neither the
count, the line nor any other buffer can be read) and [0, UNKNOWN] when it did not. A translation without asserts
reports nothing (None).

Two runs disagree when an assert fired in one and not in the other, and two translations also when one checks
asserts and the other has none (a translation that dropped them), or when different numbers of threads failed.
When both fired the other buffers are compared as usual between translations (each failing thread stopped at
its assert, or went on past it in both); against the CUDA original the assert outcome is all there is."""
from __future__ import annotations

import numpy as np

KEY = "cuport_assert"
UNKNOWN = 0xFFFFFFFF


def zeroed() -> np.ndarray:
    """The hidden buffer as the host creates it."""
    return np.zeros(2, np.uint32)


def original(fired: bool) -> np.ndarray:
    """The CUDA original's report."""
    return np.array([UNKNOWN if fired else 0, UNKNOWN], np.uint32)


def outcome(outputs: dict):
    """(threads failed or UNKNOWN, first line or UNKNOWN), or None when the run checks no assert."""
    v = outputs.get(KEY)
    if v is None:
        return None
    v = np.asarray(v).reshape(-1)
    return int(v[0]), int(v[1])


def fired(o) -> bool:
    return o is not None and o[0] != 0


def describe(o) -> str:
    if o is None:
        return "checks no assert"
    if not fired(o):
        return "no assert fired"
    threads = "" if o[0] == UNKNOWN else f" in {o[0]} thread(s)"
    line = "" if o[1] == UNKNOWN else f", first at line {o[1]}"
    return f"assert fired{threads}{line}"


def compare(la: str, oa: dict, lb: str, ob: dict, has_outputs: bool) -> tuple[bool | None, str]:
    """(ok, note) of the assert outcomes of runs a and b: ok False disagrees (note says why); None: both fired
    and one is the CUDA original, so nothing else can be compared (agree); True: compare the buffers too."""
    a, b = outcome(oa), outcome(ob)
    if a is None and b is None:
        if not has_outputs:
            return False, "nothing to compare: no output buffer and no assert checked"
        return True, ""
    orig = (a is not None and a[1] == UNKNOWN) or (b is not None and b[1] == UNKNOWN)
    if fired(a) != fired(b):
        return False, f"{la}: {describe(a)}; {lb}: {describe(b)}"
    if (a is None) != (b is None) and not orig:
        return False, f"{la} {describe(a)}, {lb} {describe(b)} (one translation lost its asserts)"
    if fired(a):
        if not orig and a[0] != b[0]:
            return False, f"{la}: {describe(a)}; {lb}: {describe(b)}"
        if orig:
            return None, f"{describe(a if a[0] != UNKNOWN else b)} on both (CUDA's buffers are unreadable " \
                         "after cudaErrorAssert)"
        return True, f"{describe(a)} on both; "
    return True, "no assert fired; " if a is not None and b is not None else ""
