"""Source text with offset <-> (row, column) mapping and edit application."""
from __future__ import annotations

import bisect
import os
import tempfile
from dataclasses import dataclass, field

from porter.diagnostics import Diagnostic, Edit


class SourceError(Exception):
    """An input that cannot be read as source (I/O, binary, not UTF-8)."""


def read_source(path: str, max_bytes: int = 8 * 1024 * 1024) -> "SourceFile":
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory")
    except FileNotFoundError:
        raise SourceError(f"{path}: No such file or directory")
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror or exc}")
    if len(data) > max_bytes:
        raise SourceError(f"{path}: file larger than {max_bytes // (1024 * 1024)} MiB, skipped")
    if b"\0" in data[:8192]:
        raise SourceError(f"{path}: binary file, skipped")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not valid UTF-8 (byte {exc.start}), skipped")
    return SourceFile(path, text)


@dataclass
class SourceFile:
    path: str
    text: str
    _line_starts: list = field(default=None, repr=False)
    _bytes: bytes = field(default=None, repr=False)

    @property
    def data(self) -> bytes:
        # libclang offsets are byte offsets: keep everything in bytes.
        if self._bytes is None:
            self._bytes = self.text.encode("utf-8")
        return self._bytes

    @property
    def line_starts(self) -> list:
        if self._line_starts is None:
            starts = [0]
            data = self.data
            i = data.find(b"\n")
            while i >= 0:
                starts.append(i + 1)
                i = data.find(b"\n", i + 1)
            self._line_starts = starts
        return self._line_starts

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (row, column) of a byte offset; columns count characters."""
        starts = self.line_starts
        row = bisect.bisect_right(starts, offset) - 1
        col = len(self.data[starts[row]:offset].decode("utf-8", "replace")) + 1
        return row + 1, col

    def offset(self, row: int, column: int) -> int:
        start = self.line_starts[row - 1]
        line = self.line(row)
        return start + len(line[: column - 1].encode("utf-8"))

    def line(self, row: int) -> str:
        starts = self.line_starts
        if row - 1 >= len(starts):
            return ""
        end = starts[row] - 1 if row < len(starts) else len(self.data)
        return self.data[starts[row - 1]:end].decode("utf-8", "replace").rstrip("\r")

    def slice(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def locate(self, diag: Diagnostic) -> Diagnostic:
        diag.row, diag.column = self.position(diag.start)
        diag.end_row, diag.end_column = self.position(max(diag.end, diag.start))
        return diag


class OverlappingEdits(Exception):
    pass


def apply_edits(data: bytes, edits) -> bytes:
    """Apply non-overlapping edits; identical duplicates are merged, overlaps raise."""
    uniq = sorted(set(edits), key=lambda e: (e.start, e.end))
    out, pos = [], 0
    for e in uniq:
        if e.start < pos:
            raise OverlappingEdits(f"edit at {e.start} overlaps previous edit ending at {pos}")
        out.append(data[pos:e.start])
        out.append(e.content.encode("utf-8"))
        pos = e.end
    out.append(data[pos:])
    return b"".join(out)


def select_edits(fix_lists) -> list[Edit]:
    """Pick fixes greedily in order, skipping any whose edits overlap ones already taken (ruff does the same;
    the skipped ones are applied by the next iteration of the fix loop)."""
    taken: list[Edit] = []
    for edits in fix_lists:
        ok = all(e.end <= t.start or e.start >= t.end or (e == t) for e in edits for t in taken)
        if ok:
            taken.extend(e for e in edits if e not in taken)
    return taken


def write_atomic(path: str, data: bytes, backup_suffix: str | None = None) -> None:
    """Write via a temporary file in the same directory and rename, optionally keeping a backup."""
    directory = os.path.dirname(os.path.abspath(path))
    if backup_suffix and os.path.exists(path):
        with open(path, "rb") as src:
            old = src.read()
        write_atomic(path + backup_suffix, old)
    fd, tmp = tempfile.mkstemp(prefix=".cuport-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
