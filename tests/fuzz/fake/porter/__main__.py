"""A fake `python -m porter` for the harness's own tests: k.cu's first word picks the misbehaviour."""
import json
import os
import signal
import sys
import time

args = sys.argv[1:]
src = open("k.cu").read() if os.path.exists("k.cu") else ""
mode = src.split()[0] if src.split() else ""
fmt = args[args.index("--output-format") + 1] if "--output-format" in args else "full"

if mode == "segv":
    os.kill(os.getpid(), signal.SIGSEGV)
if mode == "hang":
    time.sleep(30)
if mode == "trace":
    raise ValueError("boom")
if mode == "internal":
    print("cuport: internal error: KeyError: 'x' (set CUPORT_DEBUG=1 for details)", file=sys.stderr)
    sys.exit(2)
if mode == "exit3":
    sys.exit(3)
if mode == "silent2":
    sys.exit(2)
if args[0] == "translate" and "-o" in args and mode != "nohip":
    with open(args[args.index("-o") + 1], "w") as fh:
        fh.write(src)
if args[0] != "lint":
    sys.exit(0)
if "--fix" in args:
    if mode in ("growfix", "breakfix"):
        with open("k.cu", "a") as fh:
            fh.write(" x")
    sys.exit(0)

found = [("CP102", 1, 5)]
if mode == "breakfix" and " x" in src:
    found.append(("CP000", 1, 1))
if mode == "cache":
    # the second run (warm) reports something the first did not
    found = found + [("CP202", 2, 1)] if os.path.exists("seen") else found
    open("seen", "w").close()
if mode == "mismatch" and fmt == "concise":
    found = [("CP102", 1, 6)]
if mode == "zero":
    print("[]" if fmt == "json" else "")
    sys.exit(1)

rows = [{"code": c, "location": {"row": r, "column": k}} for c, r, k in found]
if fmt == "json":
    print(json.dumps(rows))
elif fmt == "json-lines":
    print("\n".join(json.dumps(x) for x in rows))
elif fmt == "concise":
    print("".join(f"k.cu:{r}:{k}: {c} msg\n" for c, r, k in found) + "Found it.")
elif fmt == "full":
    print("".join(f"{c} msg\n  --> k.cu:{r}:{k}\n   |\n\n" for c, r, k in found))
elif fmt == "github":
    print("".join(f"::error title=cuport ({c}),file=k.cu,line={r},col={k},endLine=1,endColumn=9::{c} m\n"
                  for c, r, k in found))
elif fmt == "sarif":
    print(json.dumps({"runs": [{"results": [
        {"ruleId": c, "locations": [{"physicalLocation": {"region": {"startLine": r, "startColumn": k}}}]}
        for c, r, k in found]}]}))
sys.exit(1)
