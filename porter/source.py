"""Source text with offset <-> (row, column) mapping and edit application."""
from __future__ import annotations

import bisect
import os
import stat
import sys

from porter.diagnostics import Diagnostic, Edit
from porter.record import Record


class SourceError(Exception):
    """An input that cannot be read as source (I/O, binary, special file, not UTF-8 on stdin)."""


class OutputError(Exception):
    """An output that cannot or must not be written (read-only, names an input): one line, exit 2."""


class ChangedOnDisk(OutputError):
    """The file changed on disk between cuport reading it and replacing it: the replacement is skipped."""


STDIN = "-"
BOM = b"\xef\xbb\xbf"
_STDIN: dict = {}          # "-" read once per process: {"data": bytes, "name": str}


def special_kind(path: str) -> str | None:
    """'a FIFO' / 'a device' / 'a socket' for what cuport never opens as source (open() on a FIFO blocks)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def stdin_name(stdin_filename: str | None = None) -> str:
    return stdin_filename or _STDIN.get("name") or STDIN


def preload_stdin(stdin_filename: str | None = None, max_bytes: int = 8 * 1024 * 1024) -> None:
    """Read standard input now (once), so `read_source("-")` works in any process forked later."""
    if "data" not in _STDIN:
        _STDIN["data"] = sys.stdin.buffer.read(max_bytes + 1)
    if stdin_filename:
        _STDIN["name"] = stdin_filename


def read_source(path: str, max_bytes: int = 8 * 1024 * 1024, stdin_filename: str | None = None) -> "SourceFile":
    """Read a file ("-": standard input, named `stdin_filename`) as UTF-8; a file that is not UTF-8 is read as
    Latin-1 (every byte is a character) with a note, and written back in Latin-1 by `encode`."""
    if path == STDIN:
        preload_stdin(stdin_filename, max_bytes)
        data, name = _STDIN["data"], stdin_name(stdin_filename)
    else:
        kind = special_kind(path)
        if kind:
            raise SourceError(f"{path}: {kind}, not a source file, skipped")
        name = path
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
        raise SourceError(f"{name}: file larger than {max_bytes // (1024 * 1024)} MiB, skipped")
    if b"\0" in data[:8192]:
        raise SourceError(f"{name}: binary file, skipped")
    try:
        return SourceFile(name, data.decode("utf-8"), digest=digest(data))
    except UnicodeDecodeError as exc:
        if path == STDIN:
            raise SourceError(f"{name}: standard input is not valid UTF-8 (byte {exc.start})")
        note = f"{path}: not valid UTF-8 (byte {exc.start}): read as Latin-1, written back as Latin-1"
        return SourceFile(name, data.decode("latin-1"), digest=digest(data), encoding="latin-1", note=note)


def digest(data: bytes) -> str:
    return sha256(data).hexdigest()


def sha256(data: bytes = b""):
    """hashlib.sha256 without importing hashlib where the interpreter has the built-in module: hashlib loads
    OpenSSL, several ms of a one-file pre-commit run. Same digest either way."""
    try:
        from _sha256 import sha256 as impl          # CPython <= 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as impl        # CPython >= 3.12
        except ImportError:
            from hashlib import sha256 as impl
    return impl(data)


class SourceFile(Record):
    """A file's text with its bytes, digest and encoding; maps offsets to rows and columns."""
    path: str
    text: str
    _line_starts: list
    _bytes: bytes
    digest: str | None                                      # sha256 of the bytes read (read_source)
    encoding: str                                           # how the file was decoded, and is written back
    note: str | None                                        # e.g. the Latin-1 fallback, for the user

    _fields = ('path', 'text', '_line_starts', '_bytes', 'digest', 'encoding', 'note')
    _hidden = ('_line_starts', '_bytes', 'digest')

    def __init__(self, path, text, _line_starts=None, _bytes=None, digest=None, encoding="utf-8", note=None):
        self.path = path
        self.text = text
        self._line_starts = _line_starts
        self._bytes = _bytes
        self.digest = digest
        self.encoding = encoding
        self.note = note

    def encode(self, text: str) -> bytes:
        """`text` (this file, edited) in the file's own encoding; characters Latin-1 lacks make it UTF-8."""
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError:
            return text.encode("utf-8")

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
        if row == 0 and offset >= 3 and self.data.startswith(BOM):
            col -= 1                    # a BOM is no column in an editor
        return row + 1, col

    def offset(self, row: int, column: int) -> int:
        start = self.line_starts[row - 1]
        line = self.line(row)
        if row == 1 and self.data.startswith(BOM):
            start += len(BOM)
        return start + len(line[: column - 1].encode("utf-8"))

    def line(self, row: int) -> str:
        starts = self.line_starts
        if row - 1 >= len(starts):
            return ""
        end = starts[row] - 1 if row < len(starts) else len(self.data)
        begin = starts[row - 1] + (len(BOM) if row == 1 and self.data.startswith(BOM) else 0)
        return self.data[begin:end].decode("utf-8", "replace").rstrip("\r")

    def slice(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def locate(self, diag: Diagnostic) -> Diagnostic:
        diag.row, diag.column = self.position(diag.start)
        diag.end_row, diag.end_column = self.position(max(diag.end, diag.start))
        return diag


class OverlappingEdits(Exception):
    pass


def apply_edits(data: bytes, edits) -> bytes:
    """Apply non-overlapping edits; identical duplicates are merged, overlaps raise. O(n log n): one sort, one
    join. Insertions at one offset go in the order given (a stable sort of the deduplicated edits, not of a set,
    whose order varies from run to run)."""
    uniq = sorted(dict.fromkeys(edits), key=lambda e: (e.start, e.end))
    out, pos = [], 0
    for e in uniq:
        if e.start < pos:
            raise OverlappingEdits(f"edit at {e.start} overlaps previous edit ending at {pos}")
        out.append(data[pos:e.start])
        out.append(e.content.encode("utf-8"))
        pos = e.end
    out.append(data[pos:])
    return b"".join(out)


class EditSelection(list):
    """select_edits' result: a list (in selection order) whose `in` is a set lookup, so that asking which
    fixes were taken (`all(e in edits for e in fix.edits)`) stays linear."""

    def __init__(self, edits=()):
        super().__init__(edits)
        self._set = set(self)

    def __contains__(self, e) -> bool:
        return e in self._set


def select_edits(fix_lists) -> list[Edit]:
    """Pick fixes greedily in order, skipping any whose edits overlap ones already taken (ruff does the same;
    the skipped ones are applied by the next iteration of the fix loop). Two edits overlap when their ranges
    share an inner point, or an insertion lies strictly inside the other's range; an edit identical to one
    taken is no conflict. O(n log n) in the number of edits (a pairwise check was quadratic: 65 s for
    `--fix --diff` on 770 KB of kernels).

    Positions are compressed to the sorted endpoints p0 < p1 < ...; cell 2i is the point p_i and cell 2i+1
    the open gap (p_i, p_{i+1}). An edit [p_a, p_b) with a < b covers cells 2a+1 .. 2b-1; an insertion at p_a
    is cell 2a. Two ranges overlap iff their cells meet; an insertion conflicts only with a range covering its
    cell (two insertions at one point never conflict)."""
    fixes = [list(f) for f in fix_lists]
    ends = sorted({p for f in fixes for e in f for p in (e.start, e.end)})
    index = {p: i for i, p in enumerate(ends)}
    n = 2 * len(ends) + 1
    ranges = _Marks(n)          # cells covered by taken ranges
    inserts = _Marks(n)         # cells of taken insertions
    taken: dict[Edit, None] = {}
    for edits in fixes:
        ok = True
        for e in edits:
            if e in taken:
                continue
            a = 2 * index[e.start]
            if e.end > e.start:
                lo, hi = a + 1, 2 * index[e.end] - 1
                if ranges.any(lo, hi) or inserts.any(lo, hi):
                    ok = False
                    break
            elif e.end == e.start and ranges.marked(a):
                ok = False
                break
        if ok:
            for e in edits:
                if e in taken:
                    continue
                taken[e] = None
                a = 2 * index[e.start]
                if e.end > e.start:
                    ranges.mark(a + 1, 2 * index[e.end] - 1)
                elif e.end == e.start:
                    inserts.mark(a, a)
    return EditSelection(taken)


class _Marks:
    """Cells 0..n-1 that get marked (never unmarked): mark a run, ask whether any cell of a run is marked.
    A Fenwick tree of marked counts plus a "next unmarked cell" union-find, so each cell is marked once:
    O(log n) per question, O(log n) per cell marked."""

    def __init__(self, n: int):
        self.n = n
        self.tree = [0] * (n + 1)
        self.flag = bytearray(n)
        self.next = list(range(n + 1))      # next[i]: a cell >= i that may be unmarked (path-halved)

    def marked(self, i: int) -> bool:
        return bool(self.flag[i])

    def _find(self, i: int) -> int:
        nxt = self.next
        while nxt[i] != i:
            nxt[i] = nxt[nxt[i]]
            i = nxt[i]
        return i

    def mark(self, lo: int, hi: int) -> None:
        tree, flag, nxt, n = self.tree, self.flag, self.next, self.n
        i = self._find(lo)
        while i <= hi:
            flag[i] = 1
            j = i + 1
            while j <= n:
                tree[j] += 1
                j += j & -j
            nxt[i] = i + 1
            i = self._find(i + 1)

    def _prefix(self, i: int) -> int:
        """Marked cells among 0..i-1."""
        tree, s = self.tree, 0
        while i > 0:
            s += tree[i]
            i -= i & -i
        return s

    def any(self, lo: int, hi: int) -> bool:
        if lo > hi:
            return False
        if self.flag[lo] or self.flag[hi]:
            return True
        return self._prefix(hi + 1) > self._prefix(lo)


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: hard links and symlinks count as the same."""
    if a == STDIN or b == STDIN:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(inputs, outputs) -> str | None:
    """The error line when an output names an input (cuport never replaces a source with its output), else None.
    `outputs`: (option, path) pairs; None or "-" paths are skipped."""
    keys = {}
    for p in inputs:
        if p and p != STDIN:
            try:
                st = os.stat(p)
                keys[(st.st_dev, st.st_ino)] = p
            except OSError:
                keys[os.path.realpath(p)] = p
    for option, out in outputs:
        if not out or out == STDIN:
            continue
        try:
            st = os.stat(out)
            hit = keys.get((st.st_dev, st.st_ino))
        except OSError:
            hit = keys.get(os.path.realpath(out))
        if hit is not None:
            return f"{option} {out} names the input file {hit}: cuport never replaces a source with its output"
    return None


def write_output(path: str, data: bytes, expected_original: bytes | str | None = None,
                 backup_suffix: str | None = None) -> None:
    """The one way cuport writes a file. "-" is standard output. A symlink is written through (the link stays a
    link, its target is replaced); the file's mode and owner are kept; the new bytes go to a temporary file in
    the target's directory that is renamed over it, so a reader never sees half a file. With
    `expected_original` (the bytes read, or their sha256 hex digest) a file whose bytes changed since is left
    alone (ChangedOnDisk). A device or FIFO (`-o /dev/null`) is written in place. Errors: OutputError, one line
    naming `path`."""
    if path == STDIN:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    target = os.path.realpath(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path}: is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            with open(target, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        return
    if st is not None and not os.access(target, os.W_OK):
        raise OutputError(f"{path}: cannot write: the file is read-only")
    want = None if expected_original is None else (
        expected_original if isinstance(expected_original, str) else digest(expected_original))
    old = None
    if want is not None or backup_suffix:
        old = _read_bytes(target, path) if st is not None else b""
        if want is not None and digest(old) != want:
            raise ChangedOnDisk(f"{path}: changed while processing, skipped")
    directory = os.path.dirname(target)
    try:
        import tempfile
        fd, tmp = tempfile.mkstemp(prefix=".cuport-", suffix=".tmp", dir=directory)
    except OSError as exc:
        why = exc.strerror or exc
        if isinstance(exc, FileNotFoundError):
            why = f"no directory {directory}"
        raise OutputError(f"{path}: cannot write: {why}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, st.st_mode & 0o7777)
            if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except OSError:
                    pass                # not ours to give away: the mode is still kept
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)       # mkstemp makes 0600; a new output gets the usual mode
        if backup_suffix and st is not None:
            write_output(path + backup_suffix, old)
        if want is not None and digest(_read_bytes(target, path)) != want:    # the last moment to notice
            raise ChangedOnDisk(f"{path}: changed while processing, skipped")
        os.replace(tmp, target)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OutputError):
            raise
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read_bytes(target: str, shown: str) -> bytes:
    try:
        with open(target, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise OutputError(f"{shown}: cannot read: {exc.strerror or exc}") from None


def write_atomic(path: str, data: bytes, backup_suffix: str | None = None) -> None:
    """Older name of write_output (no change check)."""
    write_output(path, data, backup_suffix=backup_suffix)
