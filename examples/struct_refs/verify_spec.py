"""cuport verify spec for particles.cu: a device function taking float3& and a struct by const reference and
returning a struct (GLSL: inout / in parameters; OpenCL C: pointers)."""
import numpy as np

from porter.verify.spec import Case, Tol, uniform


def step(n, dt, **a):
    s = a["state"].astype(np.float64).reshape(n, 6).copy()
    pos, vel = s[:, :3], s[:, 3:]
    vel[:, :2] *= 1.0 - 0.1 * dt
    vel[:, 2] -= 9.81 * dt
    pos += vel * dt
    low, high = pos[:, 2] < 0.0, pos[:, 2] > 10.0
    pos[:, 2] = np.clip(pos[:, 2], 0.0, 10.0)
    bounced = low | high
    vel[bounced, 2] = -vel[bounced, 2]
    e = 0.5 * (vel ** 2).sum(axis=1) + 9.81 * pos[:, 2]
    return {"state": s.reshape(-1), "energy": np.where(bounced, -e, e)}


KERNELS = [
    Case(source="particles.cu", kernel="particle_step",
         signature="state: f32[6 * n] inout, energy: f32[n] out, n: i32, dt: f32 = 0.05",
         init={"state": uniform(-0.5, 10.5)}, grid="ceil(n / 128)", block="128", reference=step,
         sizes=[{"n": 1000}, {"n": 10000}], tol=Tol(1e-5, 1e-4), bytes="52 * n", flops="40 * n",
         bench_sizes={"n": 1 << 26}),
]
