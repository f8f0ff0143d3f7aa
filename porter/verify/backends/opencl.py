"""OpenCL through pyopencl: a GPU platform when there is one, else PoCL on the CPU.

Global size = CUDA grid * block per dimension, local size = CUDA block (docs/translate-api.md).
CUPORT_OPENCL_PLATFORM (a substring of the platform name) picks a platform explicitly.
"""
from __future__ import annotations

import os
import re

import numpy as np

from . import CompileError, RunOutput, Session, check_launch_contract, dynamic_shared_bytes, run_session

_CTX = None
_PROGRAMS: dict = {}


def available() -> tuple[bool, str]:
    try:
        import pyopencl as cl
    except ImportError:
        return False, "pyopencl not installed"
    try:
        platforms = cl.get_platforms()
    except Exception as e:  # pyopencl raises its own LogicError when no ICD is installed
        return False, f"no OpenCL platform ({e})"
    if not platforms:
        return False, "no OpenCL platform (install pocl-binary-distribution or pocl-opencl-icd)"
    return True, ""


def _pick_device():
    import pyopencl as cl
    wanted = os.environ.get("CUPORT_OPENCL_PLATFORM", "").lower()
    candidates = []
    for p in cl.get_platforms():
        if wanted and wanted not in p.name.lower():
            continue
        for d in p.get_devices():
            rank = 0 if d.type & cl.device_type.GPU else (1 if d.type & cl.device_type.ACCELERATOR else 2)
            candidates.append((rank, p.name, d))
    if not candidates:
        raise RuntimeError(f"no OpenCL device{f' on a platform matching {wanted!r}' if wanted else ''}")
    candidates.sort(key=lambda c: c[0])
    return candidates[0][2]


def _context():
    global _CTX
    if _CTX is None:
        import pyopencl as cl
        device = _pick_device()
        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        _CTX = (ctx, queue, device)
    return _CTX


def prepare(variant) -> dict:
    _, _, device = _context()
    return {"device": f"{device.name.strip()} ({device.platform.name})"}


def _program(source: str, options: list[str]):
    import pyopencl as cl
    key = (source, tuple(options))
    if key not in _PROGRAMS:
        ctx, _, device = _context()
        try:
            _PROGRAMS[key] = cl.Program(ctx, source).build(options=options)
        except cl.RuntimeError as e:
            raise CompileError(f"OpenCL build failed:\n{str(e).strip()[:2000]}") from None
    return _PROGRAMS[key]


class ClSession(Session):
    """The program built for the device with its buffers; launch() is timed with OpenCL profiling events."""

    def __init__(self, case, source_text, manifest, sizes, arrays, options=()):
        import pyopencl as cl
        ctx, self.queue, device = _context()
        grid, block = case.launch(sizes)
        check_launch_contract(manifest, block, arrays)
        prg = _program(source_text, case.define_flags() + list(options))
        entry = (manifest or {}).get("entry_point") or case.kernel    # renamed when it is a built-in's name
        try:
            self.kernel = getattr(prg, entry)
        except AttributeError:
            raise CompileError(f"no kernel '{entry}' in the OpenCL program") from None
        if block[0] * block[1] * block[2] > device.max_work_group_size:
            raise CompileError(f"block {block} exceeds the device's max work-group size "
                               f"{device.max_work_group_size}")
        # file-scope device variables are parameters after the kernel's own (manifest "device_globals"): the
        # spec lists them in the signature at the same place, as arrays of their element count
        order = list(arrays)
        for g in (manifest or {}).get("device_globals") or []:
            if g["name"] not in arrays or order.index(g["name"]) != g["index"] or \
                    np.asarray(arrays[g["name"]]).size != g["count"]:
                raise CompileError(f"device variable '{g['name']}' ({g['type']}[{g['count']}]) must be argument "
                                   f"{g['index']} of the signature (manifest \"device_globals\")")
        mf = cl.mem_flags
        self.arrays, self.buffers, args = arrays, {}, []
        by_name = {q["name"]: q for q in (manifest or {}).get("params") or [] if "name" in q}
        for name, value in arrays.items():
            same = next((n for n, v in self.arrays.items() if v is value and n in self.buffers), None)
            if isinstance(value, np.ndarray) and same is not None:
                # bound to another parameter's memory (spec alias): one buffer passed for both
                self.buffers[name] = self.buffers[same]
                args.append(self.buffers[name])
            elif isinstance(value, np.ndarray):
                q = by_name.get(name) or {}
                if value.dtype.names and q.get("elem_size") and q["elem_size"] != value.itemsize:
                    raise CompileError(f"buffer '{name}': the translation's `{q.get('type')}` is {q['elem_size']} "
                                       f"bytes, the spec's struct {value.itemsize} (C's layout)")
                host = value if value.nbytes else np.zeros(1, value.dtype)
                self.buffers[name] = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
                args.append(self.buffers[name])
            elif isinstance(value, np.bool_):
                args.append(np.uint32(value))     # OpenCL kernels take no bool: the translation's `uint NAME_arg`
            elif isinstance(value, np.void):
                args.append(_record_arg(name, value, by_name.get(name)))
            else:
                args.append(value)
        found = (manifest or {}).get("assert")
        if found:
            # device asserts: the hidden argument after the device variables, zeroed, read back with the outputs
            from porter.verify import asserts
            if found["index"] != len(args):
                raise CompileError(f"the assert buffer is argument {found['index']} of the translation, the host has "
                                   f"{len(args)} before it (manifest \"assert\")")
            self.arrays = arrays = {**arrays, asserts.KEY: asserts.zeroed()}
            self.buffers[asserts.KEY] = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=arrays[asserts.KEY])
            args.append(self.buffers[asserts.KEY])
        # dynamic shared memory: a __local argument at the index the manifest gives, of the launch's bytes
        for la in sorted((manifest or {}).get("local_args") or [], key=lambda a: a["index"]):
            nbytes = dynamic_shared_bytes(case, sizes)
            args.insert(la["index"], cl.LocalMemory(max(nbytes, la.get("elem_size") or 1)))
        self.kernel.set_args(*args)
        self.global_size = tuple(g * b for g, b in zip(grid, block))
        self.block = block
        self.info = {"device": device.name.strip()}

    def launch(self) -> float:
        import pyopencl as cl
        event = cl.enqueue_nd_range_kernel(self.queue, self.kernel, self.global_size, self.block)
        event.wait()
        return (event.profile.end - event.profile.start) / 1e6

    def outputs(self) -> dict:
        import pyopencl as cl
        outputs = {}
        for name, buf in self.buffers.items():
            out = np.empty_like(self.arrays[name])
            if out.nbytes:
                cl.enqueue_copy(self.queue, out, buf)
            outputs[name] = out
        self.queue.finish()
        return outputs

    def close(self) -> None:
        for buf in {id(b): b for b in self.buffers.values()}.values():   # an aliased buffer once
            buf.release()
        self.buffers = {}


_VEC3 = re.compile(r"^(?:char|uchar|short|ushort|int|uint|long|ulong|float|double|half)3$")


def _record_arg(name: str, value: np.void, param: dict | None) -> np.ndarray:
    """A struct or vector by value as the kernel argument's bytes: C's layout (the translation keeps it; the
    manifest's size says so), an OpenCL 3-vector (float3) padded to its 4-element size."""
    data = np.frombuffer(value.tobytes(), np.uint8)
    if param is None:
        return data
    if _VEC3.match(str(param.get("type", ""))) and param.get("size") == len(data):
        return np.concatenate([data, np.zeros(len(data) // 3, np.uint8)])
    if param.get("size") and param["size"] != len(data):
        raise CompileError(f"by-value parameter '{name}' ({param.get('type')}): the spec's struct has {len(data)} "
                           f"bytes, the translation's {param['size']}")
    return data


def open_session(case, source_text, manifest, sizes, arrays, *, variant=None) -> ClSession:
    return ClSession(case, source_text, manifest, sizes, arrays)


def run(case, source_text, manifest, sizes, arrays, *, variant=None, repeat=1, options=()) -> RunOutput:
    return run_session(ClSession(case, source_text, manifest, sizes, arrays, options), repeat)
