import csv
import shutil

import pytest

from porter.translate.hip import docs as hip_docs, tables as hip_tables
from porter.translate.hip.tables import AREAS, FLAGS, Mapping


@pytest.mark.parametrize("area", AREAS)
def test_every_area_loads(area):
    table = hip_tables.load(area)
    assert len(table) > 0
    for name, m in table.items():
        assert isinstance(m, Mapping)
        assert m.cuda == name and m.area == area


@pytest.mark.parametrize(
    ("area", "cuda", "hip", "roc"),
    [
        ("runtime_api", "cudaMalloc", "hipMalloc", ""),
        ("runtime_api", "cudaMallocHost", "hipHostMalloc", ""),
        ("runtime_api", "cudaFreeHost", "hipHostFree", ""),
        ("runtime_api", "cudaMemcpyAsync", "hipMemcpyAsync", ""),
        ("runtime_api", "cudaGetErrorString", "hipGetErrorString", ""),
        ("runtime_api", "cudaFuncSetAttribute", "hipFuncSetAttribute", ""),
        ("runtime_api", "cudaLaunchCooperativeKernel", "hipLaunchCooperativeKernel", ""),
        ("runtime_api", "cudaThreadSynchronize", "hipDeviceSynchronize", ""),
        ("driver_api", "cuInit", "hipInit", ""),
        ("driver_api", "cuLaunchKernel", "hipModuleLaunchKernel", ""),
        ("driver_api", "cuMemAlloc_v2", "hipMalloc", ""),
        ("driver_api", "cuGetErrorString", "hipDrvGetErrorString", ""),
        ("types", "cudaMemcpyHostToDevice", "hipMemcpyHostToDevice", ""),
        ("types", "cudaError_t", "hipError_t", ""),
        ("types", "cudaSuccess", "hipSuccess", ""),
        ("types", "cudaErrorMemoryAllocation", "hipErrorOutOfMemory", ""),
        ("types", "cudaDeviceProp", "hipDeviceProp_t", ""),
        ("types", "cudaHostAllocDefault", "hipHostMallocDefault", ""),
        ("types", "CUresult", "hipError_t", ""),
        ("types", "CUdevice", "hipDevice_t", ""),
        ("types", "CUdeviceptr", "hipDeviceptr_t", ""),
        ("types", "cudaFuncAttributeMaxDynamicSharedMemorySize", "hipFuncAttributeMaxDynamicSharedMemorySize", ""),
        ("device", "__syncthreads", "__syncthreads", ""),
        ("device", "__shfl_down_sync", "__shfl_down_sync", ""),
        ("device", "__nv_bfloat16", "__hip_bfloat16", ""),
        ("headers", "cuda_runtime.h", "hip/hip_runtime.h", ""),
        ("headers", "cublas_v2.h", "hipblas/hipblas.h", "rocblas/rocblas.h"),
        ("headers", "cub/cub.cuh", "hipcub/hipcub.hpp", ""),
        ("headers", "cooperative_groups.h", "hip/hip_cooperative_groups.h", ""),
        ("cublas", "cublasSgemm", "hipblasSgemm", "rocblas_sgemm"),
        ("cublas", "cublasSgemm_v2", "hipblasSgemm", "rocblas_sgemm"),
        ("cublas", "cublasCreate", "hipblasCreate", "rocblas_create_handle"),
        ("cublas", "CUBLAS_OP_N", "HIPBLAS_OP_N", "rocblas_operation_none"),
        ("curand", "curand_init", "hiprand_init", "rocrand_init"),
        ("curand", "curandState", "hiprandState", "rocrand_state_xorwow"),
        ("cufft", "cufftExecC2C", "hipfftExecC2C", ""),
        ("cusparse", "cusparseSpMV", "hipsparseSpMV", "rocsparse_spmv"),
        ("cub", "cub::BlockReduce", "hipcub::BlockReduce", ""),
        ("cub", "cub::DeviceReduce::Sum", "hipcub::DeviceReduce::Sum", ""),
        ("cooperative_groups", "cooperative_groups::this_thread_block", "cooperative_groups::this_thread_block", ""),
    ],
)
def test_known_rows(area, cuda, hip, roc):
    m = (hip_tables.headers() if area == "headers" else hip_tables.load(area))[cuda]
    assert (m.hip, m.roc) == (hip, roc)
    assert not m.unsupported
    assert m.target() == hip
    assert m.target(roc=True) == (roc or hip)


@pytest.mark.parametrize(
    ("area", "cuda"),
    [
        ("runtime_api", "cudaGraphicsD3D11RegisterResource"),
        ("runtime_api", "cudaMemcpyToArrayAsync"),
        ("driver_api", "cuTensorMapEncodeTiled"),
        ("device", "__nanosleep"),
        ("cooperative_groups", "cooperative_groups::this_cluster"),
    ],
)
def test_known_unsupported(area, cuda):
    m = hip_tables.load(area)[cuda]
    assert m.unsupported
    assert "unsupported" in m.flags


def test_deprecated_and_removed_flags():
    assert hip_tables.load("runtime_api")["cudaThreadSynchronize"].deprecated
    assert hip_tables.load("runtime_api")["cudaBindTexture"].removed


def test_header_removal_rows():
    m = hip_tables.headers()["device_launch_parameters.h"]
    assert m.removes_include and not m.unsupported
    assert not hip_tables.headers()["cuda_runtime.h"].removes_include


@pytest.mark.parametrize("area", AREAS)
def test_csv_rows_are_well_formed(area):
    path = hip_tables.table_path(area)
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(line for line in fh if not line.startswith("#")))
    assert tuple(rows[0]) in (hip_tables.COLUMNS, hip_tables.SHORT_COLUMNS)
    names = [r[0] for r in rows[1:]]
    assert len(names) == len(set(names)), "duplicate cuda names"
    for cuda, hip, _roc, flags, *_rest in rows[1:]:
        flag_set = set(flags.split("|")) - {""}
        assert flag_set <= FLAGS, (cuda, flags)
        if area != "headers":
            assert hip or "unsupported" in flag_set, cuda
        assert cuda == cuda.strip() and hip == hip.strip()


def test_all_mappings_merges_identifiers_but_not_headers():
    merged = hip_tables.all_mappings()
    assert merged["cudaMalloc"].area == "runtime_api"
    assert merged["cublasSgemm"].area == "cublas"
    assert "cuda_runtime.h" not in merged
    assert len(merged) == sum(len(hip_tables.load(a)) for a in hip_tables.areas() if a != "headers")


def test_all_mappings_roc_marks_missing_roc_names_unsupported():
    hip_view = hip_tables.all_mappings()
    roc_view = hip_tables.all_mappings(roc=True)
    assert not hip_view["cublasSgetrfBatched"].unsupported
    assert roc_view["cublasSgetrfBatched"].unsupported
    assert roc_view["cublasSgemm"].target(roc=True) == "rocblas_sgemm"
    # outside the roc libraries the hip name is used under --roc too
    assert roc_view["cudaMalloc"].target(roc=True) == "hipMalloc"
    assert not roc_view["cufftExecC2C"].unsupported


def test_unknown_area():
    with pytest.raises(ValueError, match="unknown HIP mapping area"):
        hip_tables.load("nope")


@pytest.fixture
def scratch_rules(tmp_path, monkeypatch):
    src = hip_tables.rules_dir() / "hip"
    dst = tmp_path / "rules" / "hip"
    shutil.copytree(src, dst)
    hip_tables.clear_cache()
    monkeypatch.setattr(hip_tables, "rules_dir", lambda: tmp_path / "rules")
    yield dst
    hip_tables.clear_cache()


def _append(path, line):
    """Append a cuda,hip,roc,flags,note row, padded with empty version columns when the file has them."""
    header = next(l for l in path.read_text(encoding="utf-8").splitlines() if not l.startswith("#"))
    if header.count(",") == len(hip_tables.COLUMNS) - 1:
        cuda, hip, roc, flags, note = line.split(",")
        line = ",".join([cuda, hip, roc, flags] + [""] * len(hip_tables.VERSION_FIELDS) + [note])
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def test_duplicate_name_is_rejected(scratch_rules):
    path = scratch_rules / "runtime_api.csv"
    _append(path, "cudaMalloc,hipMalloc,,,")
    with pytest.raises(ValueError, match=r"runtime_api\.csv:\d+: duplicate cuda name 'cudaMalloc'"):
        hip_tables.load("runtime_api")


def test_unknown_flag_is_rejected(scratch_rules):
    path = scratch_rules / "device.csv"
    _append(path, "__made_up,__made_up,,broken,")
    with pytest.raises(ValueError, match=r"device\.csv:\d+: unknown flag\(s\) broken"):
        hip_tables.load("device")


def test_missing_hip_name_needs_unsupported_flag(scratch_rules):
    path = scratch_rules / "cufft.csv"
    _append(path, "cufftMadeUp,,,deprecated,")
    with pytest.raises(ValueError, match="not flagged unsupported"):
        hip_tables.load("cufft")


def test_support_doc_is_up_to_date():
    path = hip_docs.default_output()
    assert path.exists(), "run: python -m porter.translate.hip.docs"
    assert path.read_text(encoding="utf-8") == hip_docs.render(), "run: python -m porter.translate.hip.docs"
