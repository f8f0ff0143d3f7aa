"""`// cuport: launch block=(16, 16)` annotations: a launch shape written next to a kernel (or naming it anywhere
in the file), parsed with `launch.lark`; a source of block shapes for analysis/launch.py."""
from __future__ import annotations

import re

from porter.frontend.model import FileModel, Function
from porter.record import FrozenRecord

_ANNOTATION = re.compile(rb"cuport:\s*launch\b[^\n]*")


class Annotation(FrozenRecord):
    """A parsed `// cuport: launch ...` annotation."""
    kernel: str | None
    block: tuple | None
    grid: tuple | None
    shared: int | None
    start: int
    end: int
    line: int
    error: str | None

    def __init__(self, kernel, block, grid, shared, start, end, line, error=None):
        _set = object.__setattr__
        _set(self, 'kernel', kernel)
        _set(self, 'block', block)
        _set(self, 'grid', grid)
        _set(self, 'shared', shared)
        _set(self, 'start', start)
        _set(self, 'end', end)
        _set(self, 'line', line)
        _set(self, 'error', error)


_parser = None


def _lark():
    global _parser
    if _parser is None:
        import os
        from lark import Lark   # lazy: only files with an annotation pay for it
        with open(os.path.join(os.path.dirname(__file__), "launch.lark"), encoding="utf-8") as fh:
            grammar = fh.read()
        _parser = Lark(grammar, parser="lalr",
                       propagate_positions=True)
    return _parser


def parse_annotation(text: str) -> dict:
    """`launch [kernel] block=(16,16) grid=... shared=N` -> {'kernel', 'block', 'grid', 'shared'}; raises
    ValueError with lark's message on a syntax error."""
    from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken
    text = text.strip()
    try:
        tree = _lark().parse(text)
    except UnexpectedEOF:
        raise ValueError(f"`{text}`: unexpected end of the annotation") from None
    except UnexpectedToken as exc:
        if exc.token.type == "$END":
            raise ValueError(f"`{text}`: unexpected end of the annotation") from None
        raise ValueError(f"`{text}`: unexpected `{exc.token}` at column {exc.column}; expected "
                         f"`launch [kernel] block=(x, y, z)`") from None
    except UnexpectedCharacters as exc:
        raise ValueError(f"`{text}`: unexpected `{text[exc.pos_in_stream]}` at column {exc.column}") from None
    except LarkError as exc:
        raise ValueError(str(exc).strip().splitlines()[0]) from None
    out = {"kernel": None, "block": None, "grid": None, "shared": None}
    for ch in tree.children:
        if ch is None:
            continue
        if not hasattr(ch, "data"):
            out["kernel"] = str(ch)
        elif ch.data in ("block", "grid"):
            toks = ch.children[0].children
            vals = [int(x) for t in toks for x in re.split(r"\s*[x*]\s*", str(t))]
            if not 1 <= len(vals) <= 3 or any(v <= 0 for v in vals):
                raise ValueError(f"{ch.data} needs 1 to 3 positive sizes")
            out[ch.data] = tuple(vals + [1] * (3 - len(vals)))
        elif ch.data == "shared":
            out["shared"] = int(ch.children[0])
        elif ch.data == "kernel":
            out["kernel"] = str(ch.children[0])
    return out


def annotations(model: FileModel) -> list[Annotation]:
    cached = getattr(model, "_launch_annotations", None)
    if cached is not None:
        return cached
    out = []
    data = model.source.data
    if b"cuport:" in data:
        for m in _ANNOTATION.finditer(data):
            line = model.source.position(m.start())[0]
            raw = data[m.start():m.end()].decode("utf-8", "replace")
            body = raw.split(":", 1)[1].split("*/")[0]
            try:
                p = parse_annotation(body)
            except ValueError as exc:
                out.append(Annotation(None, None, None, None, m.start(), m.end(), line, str(exc)))
                continue
            out.append(Annotation(p["kernel"], p["block"], p["grid"], p["shared"], m.start(), m.end(), line))
    model._launch_annotations = out
    return out


def annotation_for(model: FileModel, fn: Function) -> Annotation | None:
    anns = [a for a in annotations(model) if a.error is None and a.block is not None]
    if not anns:
        return None
    for a in anns:
        if a.kernel is not None and a.kernel.split("::")[-1] == fn.name:
            return a
    prev_end = max([r.end for r in model.roots if r.end <= fn.node.start] or [0])
    for a in anns:
        if a.kernel is None and prev_end <= a.start < fn.node.end:
            return a
    return None


# --- launch sites ---------------------------------------------------------------------------------------------
