"""Run cuport's OpenCL translation of HeCBench secp256k1 (/tmp/hec/src/secp256k1-cuda, HeCBench f27000a5) on PoCL
with the program's own 512-point table and compare with the result the program itself checks for (main.cu's
`strcmp(result, "bbde...5d09")`): breadth's derived case has no other target to compare with (GLSL refuses the
kernel: a null pointer argument, a pointer into a buffer element's field).

    .venv/bin/python -m porter translate --to opencl /tmp/hec/src/secp256k1-cuda -o /tmp/secp-cl
    PYOPENCL_CTX=0 .venv/bin/python bench/specs/secp256k1_check.py /tmp/secp-cl/main.cl

Session 10 (branch s10-address): PASS (the program's expected hash)."""
import re, sys
import numpy as np
import pyopencl as cl

src = open("/tmp/hec/src/secp256k1-cuda/main.cu").read()
body = src[src.index("secp256k1_ge_storage prec[512] = {"):]
body = body[:body.index("};")]
entries = re.findall(r"SC\(([^)]*)\)", body)
assert len(entries) == 512, len(entries)
vals = []
for e in entries:
    v = [int(x.strip().rstrip("uU")) for x in e.split(",")]
    vals += v[7::-1] + v[15:7:-1]          # SECP256K1_FE_STORAGE_CONST(d7..d0) -> {d0..d7}
prec = np.array(vals, dtype=np.uint32)
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
prog = cl.Program(ctx, open(sys.argv[1]).read()).build()
mf = cl.mem_flags
dp = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=prec)
out = np.zeros(32, np.uint8)
do = cl.Buffer(ctx, mf.WRITE_ONLY, 32)
prog.secp256k1(q, (1,), (1,), dp, do)
cl.enqueue_copy(q, out, do)
q.finish()
h = "".join(f"{b:02x}" for b in out)
want = "bbde464b6355ee6de6deba5ae860f8a66524937eee81dde224a0214efd795d09"
print("result =", h)
print("PASS" if h == want else "FAIL")
