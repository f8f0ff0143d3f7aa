"""`cuport server` driven by a real LSP client: a small JSON-RPC client speaking the LSP base protocol
(Content-Length framing) to the server's stdio subprocess, as an editor does."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

import pytest

pytest.importorskip("pygls")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAIT = 120

HAZARD = """\
__global__ void warp_sum(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
"""
CLEAN = """\
__global__ void add(float *a, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += b[i];
}
"""


class Client:
    """The LSP base protocol over a subprocess's stdin/stdout; notifications and replies go to queues."""

    def __init__(self, cmd, cwd):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=cwd)
        self.next_id = 0
        self.replies: dict = {}
        self.notes: queue.Queue = queue.Queue()
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.notes.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            msg = json.loads(out.read(int(headers["content-length"])))
            if "id" in msg and "method" not in msg:
                with self.cv:
                    self.replies[msg["id"]] = msg
                    self.cv.notify_all()
            elif "id" in msg:                       # a request from the server (e.g. registerCapability)
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            else:
                self.notes.put(msg)

    def send(self, msg):
        data = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        with self.cv:
            assert self.cv.wait_for(lambda: rid in self.replies, timeout=WAIT), f"no reply to {method}"
            reply = self.replies.pop(rid)
        assert "error" not in reply, reply
        return reply["result"]

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnostics(self, uri, version=None):
        """The next publishDiagnostics for uri (and version, when given)."""
        while True:
            msg = self.notes.get(timeout=WAIT)
            assert msg is not None, "server exited: " + self.proc.stderr.read().decode()[-2000:]
            if msg["method"] == "textDocument/publishDiagnostics" and msg["params"]["uri"] == uri and \
                    (version is None or msg["params"].get("version") == version):
                return msg["params"]["diagnostics"]


@pytest.fixture
def client(tmp_path):
    c = Client([sys.executable, "-m", "porter", "server", "--stdio", "--debounce", "0.2"], cwd=str(tmp_path))
    init = c.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}})
    c.caps = init["capabilities"]
    c.notify("initialized", {})
    yield c
    if c.proc.poll() is None:
        c.request("shutdown", None)
        c.notify("exit", None)
        assert c.proc.wait(timeout=30) == 0
    c.proc.stdout.close()
    c.proc.stderr.close()


def open_doc(c, path, text, version=1, language="cuda"):
    path.write_text(text)
    c.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": language,
                                                       "version": version, "text": text}})
    return path.as_uri()


def apply(text, edits):
    """Apply LSP TextEdits (ASCII text: characters are UTF-16 units)."""
    lines = text.splitlines(True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    off = lambda p: starts[p["line"]] + p["character"]      # noqa: E731
    for e in sorted(edits, key=lambda e: off(e["range"]["start"]), reverse=True):
        text = text[:off(e["range"]["start"])] + e["newText"] + text[off(e["range"]["end"]):]
    return text


def test_capabilities(client):
    caps = client.caps
    assert caps["hoverProvider"] is True
    assert "quickfix" in caps["codeActionProvider"]["codeActionKinds"]
    assert caps["textDocumentSync"]["openClose"] is True


def test_diagnostics_on_open_match_lint(client, tmp_path):
    uri = open_doc(client, tmp_path / "k.cu", HAZARD)
    diags = client.diagnostics(uri)
    lint = json.loads(subprocess.run([sys.executable, "-m", "porter", "lint", "--no-cache", "--output-format",
                                      "json", str(tmp_path / "k.cu")], capture_output=True, text=True,
                                     cwd=ROOT).stdout)
    assert sorted((d["code"], d["range"]["start"]["line"] + 1, d["range"]["start"]["character"] + 1)
                  for d in diags) == \
        sorted((x["code"], x["location"]["row"], x["location"]["column"]) for x in lint)
    cp103 = next(d for d in diags if d["code"] == "CP103")
    assert cp103["range"]["start"] == {"line": 3, "character": 22}      # the 16 in `offset = 16`
    assert cp103["source"] == "cuport" and cp103["severity"] == 1
    assert cp103["codeDescription"]["href"].endswith("CP103")


def test_quick_fix_and_fix_all(client, tmp_path):
    uri = open_doc(client, tmp_path / "k.cu", HAZARD)
    diags = client.diagnostics(uri)
    cp202 = next(d for d in diags if d["code"] == "CP202")
    actions = client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": cp202["range"],
                                                         "context": {"diagnostics": [cp202]}})
    quick = [a for a in actions if a["kind"] == "quickfix"]
    assert len(quick) == 1 and "CP202" in quick[0]["title"] and quick[0]["isPreferred"]
    edits = quick[0]["edit"]["changes"][uri]
    fixed = apply(HAZARD, edits)
    assert "__shfl_down_sync(0xffffffffffffffffull, v, offset)" in fixed
    assert fixed.replace("0xffffffffffffffffull", "0xffffffff") == HAZARD      # only that edit
    # the whole-file action is the fix engine's result, which lint --fix would write
    fix_all = [a for a in actions if a["kind"] == "source.fixAll.cuport"]
    assert len(fix_all) == 1
    whole = apply(HAZARD, fix_all[0]["edit"]["changes"][uri])
    (tmp_path / "cli.cu").write_text(HAZARD)
    subprocess.run([sys.executable, "-m", "porter", "lint", "--fix", "--no-cache", str(tmp_path / "cli.cu")],
                   cwd=ROOT, capture_output=True)
    assert whole == (tmp_path / "cli.cu").read_text() != HAZARD
    # the edited text, sent as a change, is linted again after the pause: the fixed finding is gone
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": fixed}]})
    after = client.diagnostics(uri, version=2)
    assert "CP202" not in {d["code"] for d in after} and len(after) == len(diags) - 1


def test_no_action_without_a_safe_fix(client, tmp_path):
    uri = open_doc(client, tmp_path / "c.cu", CLEAN)
    assert client.diagnostics(uri) == []
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "context": {"diagnostics": []},
        "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 10}}})
    assert actions == []


def test_hover_shows_rule_doc(client, tmp_path):
    uri = open_doc(client, tmp_path / "k.cu", HAZARD + "// cuport: ignore[CP801]\n")
    diags = client.diagnostics(uri)
    cp102 = next(d for d in diags if d["code"] == "CP102")
    hov = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": cp102["range"]["start"]})
    from porter.lint.registry import RULES
    assert hov["contents"]["kind"] == "markdown"
    assert hov["contents"]["value"].startswith("**hardcoded-lane-arithmetic (CP102)**")
    assert RULES["CP102"].doc.splitlines()[0] in hov["contents"]["value"]
    # a code written in a comment
    hov = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": {"line": 7, "character": 20}})
    assert "(CP801)" in hov["contents"]["value"]
    # nothing to say on plain code
    assert client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": 0, "character": 2}}) is None


def test_other_files_ignored_and_close_clears(client, tmp_path):
    open_doc(client, tmp_path / "notes.txt", HAZARD, language="plaintext")
    uri = open_doc(client, tmp_path / "k.cuh", HAZARD, language="cpp")      # by suffix
    assert client.diagnostics(uri)                  # the .txt published nothing before this
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def test_debounce_lints_the_last_text_only(client, tmp_path):
    uri = open_doc(client, tmp_path / "k.cu", CLEAN)
    assert client.diagnostics(uri, version=1) == []
    for v, text in ((2, HAZARD), (3, HAZARD.replace("& 31", "% 32")), (4, CLEAN + "\n")):
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": v},
                                                 "contentChanges": [{"text": text}]})
    assert client.diagnostics(uri) == []            # the first publication after the burst is version 4's
    with pytest.raises(queue.Empty):
        client.notes.get(timeout=1.5)               # and versions 2 and 3 were never linted


def test_missing_pygls_is_one_line(tmp_path):
    # a site directory where `import pygls` fails
    (tmp_path / "pygls").mkdir()
    (tmp_path / "pygls" / "__init__.py").write_text("raise ImportError('no pygls here')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "porter", "server"], cwd=ROOT, capture_output=True, text=True,
                       env=env, stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().startswith("cuport: error: cuport server needs pygls") and "Traceback" not in r.stderr
