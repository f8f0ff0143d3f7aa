"""`cuport server`: a Language Server (LSP over stdio, pygls) for .cu / .cuh files, as `ruff server` is for Python.

- diagnostics: the lint findings of the editor's text (saved or not), published on open and save at once and on
  change after a pause in typing (DEBOUNCE_S), with the rule's code, name and documentation link;
- code actions: each finding's safe fix as a quick fix (the lint Diagnostic's edits as LSP TextEdits), and
  "Fix all safe cuport findings" (source.fixAll.cuport: the fix engine's loop, porter/lint/fixer.py, on the
  whole text);
- hover: the rule's documentation (porter/lint/registry.py) over a finding or over a code such as CP102 written
  in a suppression comment.

Each lint runs in a supervised child (porter.isolate) so a file that crashes libclang costs a CP000 finding, not
the server. The configuration is the one `cuport lint` uses for the file (closest pyproject.toml / cuport.toml).
"""
from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlparse

from porter import __version__

DEBOUNCE_S = 0.3
SUFFIXES = (".cu", ".cuh")
LANGUAGES = ("cuda", "cuda-cpp", "cuda_cpp")
_CODE = re.compile(r"\bCP\d{3}\b")


def add_arguments(p) -> None:
    p.add_argument("--stdio", action="store_true", help="talk LSP over standard input/output (the default; "
                   "accepted because editors pass it)")
    p.add_argument("--debounce", type=float, default=DEBOUNCE_S, metavar="S",
                   help=f"seconds of quiet after an edit before it is linted (default {DEBOUNCE_S})")


def main(args) -> int:
    try:
        server = build_server(getattr(args, "debounce", DEBOUNCE_S))
    except ImportError as exc:
        print(f"cuport: error: cuport server needs pygls ({exc}): pip install 'cuport[server]'", file=sys.stderr)
        return 2
    channel = sys.stdout.buffer
    sys.stdout = sys.stderr           # a stray print must not corrupt the LSP channel
    server.start_io(sys.stdin.buffer, channel)
    return 0


# --- positions: LSP counts UTF-16 code units, lint counts bytes --------------------------------------------------

def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def to_position(src, offset: int):
    """(line, character) in LSP terms of a byte offset into src (a porter.source.SourceFile)."""
    starts = src.line_starts
    import bisect
    row = bisect.bisect_right(starts, offset) - 1
    prefix = src.data[starts[row]:offset].decode("utf-8", "replace")
    return row, _utf16_len(prefix)


def to_offset(src, line: int, character: int) -> int:
    """The byte offset of an LSP position (clamped to the line)."""
    starts = src.line_starts
    if line >= len(starts):
        return len(src.data)
    text = src.line(line + 1)
    units, chars = 0, 0
    for ch in text:
        if units >= character:
            break
        units += _utf16_len(ch)
        chars += 1
    return starts[line] + len(text[:chars].encode("utf-8"))


def uri_path(uri: str) -> str:
    u = urlparse(uri)
    return unquote(u.path) if u.scheme == "file" else uri


# --- linting (in a supervised child) -----------------------------------------------------------------------------

_SETTINGS: dict = {}


def settings_for(path: str):
    from porter.config import load_settings
    d = os.path.dirname(os.path.abspath(path)) or "."
    if d not in _SETTINGS:
        _SETTINGS[d] = load_settings(d if os.path.isdir(d) else ".", None, False)
    return _SETTINGS[d]


def lint_text(path: str, text: str) -> list:
    """Lint diagnostics of `text` as the file `path`, or one CP000 when cuport gave up on it."""
    from porter import isolate
    from porter.lint.checker import lint_source
    from porter.source import SourceFile
    try:
        settings = settings_for(path)
    except Exception as exc:          # a broken configuration: say so on the file rather than go silent
        from porter.lint.registry import diagnostic
        d = diagnostic("CP000", f"cuport configuration: {exc}", path, 0, 0)
        d.row = d.column = d.end_row = d.end_column = 1
        return [d]
    res = isolate.call(lambda: lint_source(SourceFile(path, text), settings).diagnostics, path,
                       isolate.Limits.of(settings), text)
    if isinstance(res, isolate.Failure):
        d = isolate.diagnostic(path, res.message)
        SourceFile(path, text).locate(d)
        return [d]
    return res


def fix_all_text(path: str, text: str) -> str:
    """The text after every safe fix (the fix engine's loop); the text itself when cuport gave up."""
    from porter import isolate
    from porter.lint.checker import fix_source
    from porter.source import SourceFile
    settings = settings_for(path)
    res = isolate.call(lambda: fix_source(SourceFile(path, text), settings).text, path,
                       isolate.Limits.of(settings), text)
    return text if isinstance(res, isolate.Failure) else res


# --- the server ----------------------------------------------------------------------------------------------------

class _Doc:
    """What the last lint of one document saw: its version and text, and the diagnostics found."""
    __slots__ = ("version", "source", "diagnostics")

    def __init__(self, version, source, diagnostics):
        self.version, self.source, self.diagnostics = version, source, diagnostics


def build_server(debounce: float = DEBOUNCE_S):
    from lsprotocol import types as T
    from pygls.lsp.server import LanguageServer

    from porter.diagnostics import Applicability
    from porter.lint.registry import RULES
    from porter.source import SourceFile

    server = LanguageServer("cuport", __version__, text_document_sync_kind=T.TextDocumentSyncKind.Full)
    pool = ThreadPoolExecutor(1, thread_name_prefix="cuport-lint")   # one lint at a time, in order
    docs: dict[str, _Doc] = {}
    timers: dict[str, asyncio.TimerHandle] = {}
    lock = threading.Lock()
    severity = {"error": T.DiagnosticSeverity.Error, "warning": T.DiagnosticSeverity.Warning,
                "info": T.DiagnosticSeverity.Information}

    def wanted(doc) -> bool:
        return doc.uri.lower().endswith(SUFFIXES) or (doc.language_id or "") in LANGUAGES

    def lsp_range(src, start, end):
        (l1, c1), (l2, c2) = to_position(src, start), to_position(src, max(start, end))
        return T.Range(T.Position(l1, c1), T.Position(l2, c2))

    def lsp_diagnostic(src, d):
        info = RULES.get(d.code)
        return T.Diagnostic(
            range=lsp_range(src, d.start, d.end), message=d.message, source="cuport", code=d.code,
            severity=severity.get(d.severity, T.DiagnosticSeverity.Warning),
            code_description=T.CodeDescription(href=info.url) if info else None,
            data={"fix": d.fix.message} if d.fixable and d.fix.applicability == Applicability.SAFE else None)

    def lint_now(uri: str):
        """Lint the document's current text in the worker thread; publish unless the text changed meanwhile."""
        doc = server.workspace.get_text_document(uri)
        version, text, path = doc.version, doc.source, uri_path(uri)
        loop = asyncio.get_running_loop()     # the server's: the reply is written from its thread

        def work():
            diags = lint_text(path, text)
            src = SourceFile(path, text)
            with lock:
                current = server.workspace.text_documents.get(uri)
                if current is None or current.version != version:
                    return                    # closed or edited since: a newer lint is on its way
                docs[uri] = _Doc(version, src, diags)
            params = T.PublishDiagnosticsParams(uri=uri, version=version,
                                                diagnostics=[lsp_diagnostic(src, d) for d in diags])
            loop.call_soon_threadsafe(server.text_document_publish_diagnostics, params)
        pool.submit(_logged(server, loop, work))

    def schedule(uri: str, delay: float):
        old = timers.pop(uri, None)
        if old is not None:
            old.cancel()
        if delay <= 0:
            lint_now(uri)
        else:
            timers[uri] = asyncio.get_running_loop().call_later(delay, lint_now, uri)

    @server.feature(T.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: T.DidOpenTextDocumentParams):
        if wanted(params.text_document):
            schedule(params.text_document.uri, 0)

    @server.feature(T.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: T.DidSaveTextDocumentParams):
        doc = ls.workspace.get_text_document(params.text_document.uri)
        if wanted(doc):
            _SETTINGS.clear()                 # a saved configuration file takes effect
            schedule(doc.uri, 0)

    @server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: T.DidChangeTextDocumentParams):
        doc = ls.workspace.get_text_document(params.text_document.uri)
        if wanted(doc):
            schedule(doc.uri, debounce)

    @server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params: T.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        t = timers.pop(uri, None)
        if t is not None:
            t.cancel()
        with lock:
            docs.pop(uri, None)
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(
        code_action_kinds=[T.CodeActionKind.QuickFix, T.CodeActionKind.SourceFixAll + ".cuport"]))
    async def code_action(ls, params: T.CodeActionParams):
        uri = params.text_document.uri
        with lock:
            doc = docs.get(uri)
        current = ls.workspace.text_documents.get(uri)
        if doc is None or current is None or current.version != doc.version:
            return []                         # findings of an older text: their offsets no longer hold
        src, actions = doc.source, []
        only = params.context.only
        if not only or any(k.startswith(T.CodeActionKind.QuickFix) for k in only):
            lo = to_offset(src, params.range.start.line, params.range.start.character)
            hi = to_offset(src, params.range.end.line, params.range.end.character)
            for d in doc.diagnostics:
                if not (d.fixable and d.fix.applicability == Applicability.SAFE):
                    continue
                if d.end < lo or d.start > hi:
                    continue
                edits = [T.TextEdit(lsp_range(src, e.start, e.end), e.content) for e in d.fix.edits]
                actions.append(T.CodeAction(
                    title=f"{d.fix.message} ({d.code})", kind=T.CodeActionKind.QuickFix,
                    diagnostics=[lsp_diagnostic(src, d)], is_preferred=True,
                    edit=T.WorkspaceEdit(changes={uri: edits})))
        fix_all = T.CodeActionKind.SourceFixAll + ".cuport"
        if any(d.fixable and d.fix.applicability == Applicability.SAFE for d in doc.diagnostics) and \
                (not only or any(fix_all.startswith(k) for k in only)):
            new = await asyncio.get_running_loop().run_in_executor(pool, fix_all_text, uri_path(uri), src.text)
            if new != src.text:
                end = to_position(src, len(src.data))
                actions.append(T.CodeAction(
                    title="Fix all safe cuport findings", kind=fix_all,
                    edit=T.WorkspaceEdit(changes={uri: [T.TextEdit(
                        T.Range(T.Position(0, 0), T.Position(*end)), new)]})))
        return actions

    @server.feature(T.TEXT_DOCUMENT_HOVER)
    def hover(ls, params: T.HoverParams):
        uri = params.text_document.uri
        current = ls.workspace.text_documents.get(uri)
        if current is None:
            return None
        pos = params.position
        line = current.lines[pos.line] if pos.line < len(current.lines) else ""
        code = next((m.group(0) for m in _CODE.finditer(line)
                     if _utf16_len(line[:m.start()]) <= pos.character <= _utf16_len(line[:m.end()])), None)
        with lock:
            doc = docs.get(uri)
        if code is None and doc is not None and doc.version == current.version:
            off = to_offset(doc.source, pos.line, pos.character)
            code = next((d.code for d in doc.diagnostics if d.start <= off <= max(d.end, d.start + 1)), None)
        info = RULES.get(code) if code else None
        if info is None:
            return None
        text = f"**{info.name} ({info.code})**, severity {info.sev} ({info.level})\n\n{info.doc}\n\n[{info.url}]({info.url})"
        return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=text))

    @server.feature(T.SHUTDOWN)
    def shutdown(ls, params):
        for t in timers.values():
            t.cancel()
        pool.shutdown(wait=False, cancel_futures=True)

    return server


def _logged(server, loop, fn):
    """fn for the worker thread: an internal error becomes a window/logMessage, never a dead server."""
    def run():
        try:
            fn()
        except Exception as exc:
            from lsprotocol import types as T
            msg = T.LogMessageParams(T.MessageType.Error, f"cuport: internal error: {type(exc).__name__}: {exc}")
            loop.call_soon_threadsafe(server.window_log_message, msg)
    return run
