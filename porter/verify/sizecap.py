"""Bringing a derived verify case's sizes under a cap (bench/breadth.py --verify; `cuport verify --args`, whose
program arguments can size buffers in the GBs: HeCBench's adjacent runs 100M elements): the largest size halved,
keeping the power of two it is a multiple of, until every buffer and the launch fit; else the reason it cannot."""
from __future__ import annotations

VERIFY_CAP = 1 << 20            # elements per buffer and threads per launch
# a case whose every size the program fixes (no size to halve: ldpc's buffers of MCW * CW * ROW * BLK_COL floats
# under a (BLK_ROW, MCW) grid) is the program's own: it runs at that size up to this many elements or threads
FIXED_CAP = 1 << 22


def cap_sizes(case: dict, cap: int = VERIFY_CAP, fixed_cap: int = FIXED_CAP) -> tuple[dict, str | None]:
    """The derived sizes, the largest halved (keeping the power of two it is a multiple of, up to 256) until every
    buffer and the launch fit `cap`; a case with no size to halve (the program fixes every one) as it is, up to
    FIXED_CAP. Returns (sizes, None) or (sizes, why they cannot be brought under the cap)."""
    from porter.verify.derive import case_from_dict
    from porter.verify.notation import eval_int
    sizes = dict(case["sizes"][0])
    try:
        c = case_from_dict(case)
    except Exception as e:              # what was derived does not make a case
        return sizes, f"{type(e).__name__}: {e}"

    def largest(sz):
        env = c.env(sz)
        grid, block = c.launch(sz)
        counts = [grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]]
        for p in c.sig:
            if p.is_array:
                n = 1
                for e in p.shape:
                    n *= eval_int(e, env, p.name)
                counts.append(n)
        return max(counts)

    try:
        n = largest(sizes)
    except Exception as e:              # the derived sizes themselves cannot be evaluated
        return sizes, f"sizes {sizes}: {type(e).__name__}: {e}"
    if not sizes and n <= max(cap, fixed_cap):
        return sizes, None              # nothing to halve: run as the program does (Oclgrind too)
    # the power of two each size is a multiple of (up to 256) stays; a size that is a power of two itself may go
    # down to 32 (fpc's block `wgs` = 256 sizes its buffers as wgs^3 / 4)
    even = {k: (32 if v > 32 and v & (v - 1) == 0 else max(1, min(v & -v, 256))) for k, v in sizes.items()}
    while n > cap:
        names = sorted((k for k, v in sizes.items() if v > even[k]), key=lambda k: sizes[k], reverse=True)
        top = [k for k in names if sizes[k] == sizes[names[0]]] if names else []
        # sizes of one value shrink together (hypterm's L, M, N are one cube: its guards compare j and k with N),
        # then the largest alone; a halving that empties the launch is not taken
        for group in ([top] if len(top) > 1 else []) + [[k] for k in names]:
            trial = {**sizes, **{k: _half(sizes[k], even[k]) for k in group}}
            try:
                n = largest(trial)
            except Exception:
                continue
            sizes = trial
            break
        else:
            if not sizes:               # marchingCubes' Lv1: N, voxelZLv1 are constants its kernel reads too
                return sizes, f"cannot bring the buffers or the launch under {cap} elements: the program fixes " \
                              f"every size of this launch ({n} elements or threads)"
            return sizes, f"cannot bring the buffers or the launch under {cap} elements (sizes {sizes})"
    return sizes, None


def _half(v: int, step: int) -> int:
    """About v / 2, still a multiple of `step` (the source's `nPerRng` must stay even, a width a multiple of 16),
    never below `step` itself: mt's nPerRng = 1 read past Rand under Oclgrind."""
    return max(step, v // 2 // step * step)
