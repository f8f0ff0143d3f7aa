"""scripts/import_hipify_tables.py on a miniature HIPIFY checkout, the overlay and the version selection."""
import importlib.util
import os
import shutil

import pytest

from porter.translate.hip import tables as hip_tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("import_hipify_tables",
                                               os.path.join(ROOT, "scripts", "import_hipify_tables.py"))
imp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(imp)

HEAD = "|**CUDA**|**A**|**D**|**C**|**R**|**HIP**|**A**|**D**|**C**|**R**|**E**|\n|:--|:-:|:-:|:-:|:-:|:--|:-:|:-:|:-:|:-:|:-:|\n"
HEAD_ROC = ("|**CUDA**|**A**|**D**|**C**|**R**|**HIP**|**A**|**D**|**C**|**R**|**E**|**ROC**|**A**|**D**|**C**|**R**|"
            "**E**|\n|:--|" + ":-:|" * 16 + "\n")
RUNTIME = ("# CUDA Runtime API supported by HIP\n\n## **1. Device Management**\n\n" + HEAD +
           "|`cudaMalloc`| | | | |`hipMalloc`|1.5.0| | | | |\n"
           "|`cudaThreadExit`| |10.0| | |`hipDeviceReset`|1.6.0| | | | |\n"
           "|`cudaBindTexture`| |11.0| |12.0|`hipBindTexture`|1.6.0|3.8.0| | | |\n"
           "|`cudaNewThing`|12.4| | | |`hipNewThing`|6.2.0| | | |6.2.0|\n"
           "|`cudaNoHip`|11.3| | | | | | | | | |\n"
           "\n## **35. Data types used by CUDA Runtime**\n\n" + HEAD +
           "|`cudaError_t`| | | | |`hipError_t`|1.5.0| | | | |\n")
BLAS = ("# CUBLAS\n\n## **1. CUBLAS Data types**\n\n" + HEAD_ROC +
        "|`cublasSgemm_v2_64`|12.0| | | |`hipblasSgemm_64`|6.3.0| | | |6.3.0|`rocblas_sgemm_64`|6.3.0| | | |6.3.0|\n"
        "|`cublasGetLoggerCallback`|11.5| | | |`hipblasGetLogger`|9.9.0| | | | |" + " |" * 6 + "\n"
        "\n## **9. BLASLt Function Reference**\n\n" + HEAD_ROC +
        "|`cublasLtCreate`|10.1| | | |`hipblasLtCreate`|5.5.0| | | | |" + " |" * 6 + "\n")
DNN = ("# CUDNN\n\n## **2. CUDNN Functions**\n\n" + HEAD_ROC.replace("ROC", "MIOPEN") +
       "|`cudnnCreate`|1.0.0| | | |`hipdnnCreate`| | | | | |`miopenCreate`|2.1.0| | | | |\n"
       "|`cudnnOnlyHip`|1.0.0| | | |`hipdnnOnlyHip`| | | | | |" + " |" * 6 + "\n"
       "|`cudnnGetConvolutionForwardWorkspaceSize`|1.0.0| | | |`hipdnnGetConvolutionForwardWorkspaceSize`| | | | | "
       "|`miopenConvolutionForwardGetWorkSpaceSize`|2.1.0| | | | |\n")
INCLUDES = ('const std::map <llvm::StringRef, hipCounter> CUDA_INCLUDE_MAP {\n'
            '  {"cuda_runtime.h", {"hip/hip_runtime.h", "", CONV_INCLUDE_CUDA_MAIN_H, API_RUNTIME, 0}},\n'
            '  {"cublas_v2.h", {"hipblas.h", "rocblas.h", CONV_INCLUDE_CUDA_MAIN_V2_H, API_BLAS, 0}},\n'
            '  {"caffe2/core/common_gpu.h", {"caffe2/core/hip/common_gpu.h", "", CONV_INCLUDE, API_CAFFE2, 0, '
            'UNSUPPORTED}},\n'
            '  {"caffe2/core/common_cudnn.h", {"caffe2/core/hip/common_miopen.h", "", CONV_INCLUDE, API_CAFFE2, 0}},\n'
            '};\n')
ARG_CASTS = ('const std::string sCudaMallocHost = "cudaMallocHost";\n'
             'const std::string sCudnnGetConvolutionForwardWorkspaceSize = "cudnnGetConvolutionForwardWorkspaceSize";\n'
             'const std::string sCudaGetDriverEntryPoint = "cudaGetDriverEntryPoint";\n'
             'std::map<std::string, std::vector<ArgCastStruct>> FuncArgCasts {\n'
             '  {sCudaGetDriverEntryPoint,\n    {\n      {\n        {\n'
             '          {2, {e_add_const_argument, cw_None, std::to_string(int(HIP_LATEST / 10))}}\n'
             '        }\n      }\n    }\n  },\n'
             '  {sCudaMallocHost, { { { {3, {e_add_const_argument, cw_None, "hipHostMallocDefault"}} } } } },\n'
             '  {sCudnnGetConvolutionForwardWorkspaceSize,\n    {\n      {\n        {\n'
             '          {1, {e_move_argument, cw_None, "", 2}},\n'
             '          {5, {e_remove_argument, cw_DataLoss}}\n'
             '        },\n        true,\n        true\n      }\n    }\n  },\n'
             '};\n')
CAFFE2 = ('const std::map<llvm::StringRef, hipCounter> CUDA_CAFFE2_TYPE_NAME_MAP {\n'
          '  {"CUDAContext", {"HIPContext", "", CONV_TYPE, API_CAFFE2, 1}},\n};\n')


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "HIPIFY"
    tables = root / "docs" / "tables"
    tables.mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "CUDA2HIP.cpp").write_text(INCLUDES)
    (root / "src" / "HipifyAction.cpp").write_text(ARG_CASTS)
    (root / "src" / "Statistics.h").write_text("  HIP_6020 = 6020,\n  HIP_LATEST = HIP_6020,\n")
    (root / "src" / "CUDA2HIP_CAFFE2_API_types.cpp").write_text(CAFFE2)
    (root / "REVISION").write_text("abc123 2024-10-24\n")
    empty = "# t\n\n## **1. X**\n\n" + HEAD
    for name, _area in imp.TABLES:
        (tables / name).write_text(empty)
    (tables / "NCCL_API_supported_by_HIP.md").unlink()          # optional table absent: no nccl.csv
    (tables / "CUDA_Runtime_API_functions_supported_by_HIP.md").write_text(RUNTIME)
    (tables / "CUBLAS_API_supported_by_HIP_and_ROC.md").write_text(BLAS)
    (tables / "CUDNN_API_supported_by_HIP_and_MIOPEN.md").write_text(DNN)
    for name in ("CURAND_API_supported_by_HIP_and_ROC.md", "CUSPARSE_API_supported_by_HIP_and_ROC.md",
                 "CUSOLVER_API_supported_by_HIP_and_ROC.md"):
        (tables / name).write_text("# t\n\n## **1. X**\n\n" + HEAD_ROC)
    return root


@pytest.fixture
def rules(tmp_path, checkout, monkeypatch):
    """A rules/hip directory imported from the miniature checkout (plus cuport's own files)."""
    out = tmp_path / "rules" / "hip"
    out.mkdir(parents=True)
    shutil.copy(hip_tables.rules_dir() / "hip" / "cooperative_groups.csv", out)
    assert imp.main([str(checkout), "--rules", str(out)]) == 0
    (out / "overlay.csv").write_text(
        "# test overlay\narea,cuda,hip,roc,flags,note,reason\n"
        "runtime_api,cudaNoHip,hipNoHipYet,,,,HIP has it under another header\n"
        "runtime_api,cudaMalloc,=,=,=,a note,note only\n")
    hip_tables.clear_cache()
    monkeypatch.setattr(hip_tables, "rules_dir", lambda: tmp_path / "rules")
    yield out
    hip_tables.clear_cache()


def test_import_writes_areas_with_revision_and_versions(rules):
    text = (rules / "runtime_api.csv").read_text()
    assert text.startswith("# source: ROCm/HIPIFY abc123 2024-10-24: CUDA_Runtime_API_functions_supported_by_HIP.md")
    rt = hip_tables.load("runtime_api")
    assert rt["cudaThreadExit"].hip == "hipDeviceReset" and rt["cudaThreadExit"].deprecated
    assert rt["cudaBindTexture"].removed and rt["cudaBindTexture"].cuda_removed == "12.0"
    assert rt["cudaNewThing"].experimental and rt["cudaNewThing"].hip_added == "6.2.0"
    assert "cudaError_t" in hip_tables.load("types") and "cudaError_t" not in rt
    assert not (rules / "nccl.csv").exists() and "nccl" not in hip_tables.areas()


def test_cublas_ilp64_and_cublaslt_split(rules):
    blas = hip_tables.load("cublas")
    assert (blas["cublasSgemm_v2_64"].hip, blas["cublasSgemm_v2_64"].roc) == ("hipblasSgemm_64", "rocblas_sgemm_64")
    assert "cublasLtCreate" not in blas
    assert hip_tables.load("cublaslt")["cublasLtCreate"].hip == "hipblasLtCreate"
    # under --roc a cuBLAS row without a rocBLAS name is unsupported; cuBLASLt keeps hipBLASLt
    roc = hip_tables.all_mappings(roc=True)
    assert roc["cublasGetLoggerCallback"].unsupported
    assert roc["cublasLtCreate"].target(roc=True) == "hipblasLtCreate"


def test_headers_from_include_map_and_layout(rules):
    assert hip_tables.headers()["cublas_v2.h"].hip == "hipblas/hipblas.h"
    assert hip_tables.headers()["cublas_v2.h"].roc == "rocblas/rocblas.h"
    assert hip_tables.headers("5.1")["cublas_v2.h"].hip == "hipblas.h"
    assert hip_tables.headers("5.2")["cublas_v2.h"].hip == "hipblas/hipblas.h"
    assert hip_tables.headers()["cuda_runtime.h"].hip == "hip/hip_runtime.h"
    assert hip_tables.headers()["caffe2/core/common_gpu.h"].unsupported
    assert hip_tables.headers()["caffe2/core/common_cudnn.h"].hip == "caffe2/core/hip/common_miopen.h"


def test_caffe2_names_from_the_sources(rules):
    assert hip_tables.load("caffe2")["CUDAContext"].hip == "HIPContext"
    assert "caffe2" in hip_tables.SCOPED_AREAS


def test_argument_rewrites_from_func_arg_casts(rules):
    text = (rules / "arguments.csv").read_text()
    assert text.startswith("# source: ROCm/HIPIFY abc123 2024-10-24: src/HipifyAction.cpp (FuncArgCasts)\n"
                           "# hip_latest: 6.2.0\n")
    rows = {(r.cuda, r.arg): r for rs in hip_tables._arguments()[1].values() for r in rs}
    assert (rows[("cudaMallocHost", 3)].action, rows[("cudaMallocHost", 3)].value) == ("add", "hipHostMallocDefault")
    assert rows[("cudaGetDriverEntryPoint", 2)].value == "hip_version"
    mv = rows[("cudnnGetConvolutionForwardWorkspaceSize", 1)]
    assert (mv.action, mv.to, mv.target) == ("move", 2, "miopen")
    rm = rows[("cudnnGetConvolutionForwardWorkspaceSize", 5)]
    assert (rm.action, rm.warning) == ("remove", "data-loss")
    assert hip_tables.hip_version_code() == "602" and hip_tables.hip_version_code("6.1") == "601"
    # the MIOpen rows apply with --miopen only
    assert len(hip_tables.arg_rewrites("cudnnGetConvolutionForwardWorkspaceSize", miopen=True)) == 2
    assert hip_tables.arg_rewrites("cudnnGetConvolutionForwardWorkspaceSize") == ()


def test_import_without_func_arg_casts_is_an_error(checkout, tmp_path, capsys):
    (checkout / "src" / "HipifyAction.cpp").write_text("int x;\n")
    assert imp.main([str(checkout), "--rules", str(tmp_path / "out")]) == 2
    assert "no FuncArgCasts" in capsys.readouterr().err


def test_overlay_wins_and_keeps_reason(rules):
    rt = hip_tables.load("runtime_api")
    assert rt["cudaNoHip"].hip == "hipNoHipYet" and not rt["cudaNoHip"].unsupported
    assert rt["cudaNoHip"].reason == "HIP has it under another header"
    assert rt["cudaNoHip"].cuda_added == "11.3"          # version columns of the imported row kept
    assert rt["cudaMalloc"].hip == "hipMalloc" and rt["cudaMalloc"].note == "a note"


def test_overlay_row_needs_reason(rules):
    (rules / "overlay.csv").write_text("area,cuda,hip,roc,flags,note,reason\nruntime_api,cudaMalloc,x,,,,\n")
    hip_tables.clear_cache()
    with pytest.raises(ValueError, match=r"overlay\.csv:2: every overlay row needs .* a reason"):
        hip_tables.load("runtime_api")


def test_overlay_keep_needs_imported_row(rules):
    (rules / "overlay.csv").write_text("area,cuda,hip,roc,flags,note,reason\nruntime_api,cudaNope,=,=,=,n,r\n")
    hip_tables.clear_cache()
    with pytest.raises(ValueError, match="has no such row"):
        hip_tables.load("runtime_api")


def test_miopen_selects_the_miopen_column(rules):
    assert hip_tables.all_mappings()["cudnnCreate"].target() == "hipdnnCreate"
    mi = hip_tables.all_mappings(miopen=True)
    assert mi["cudnnCreate"].target() == "miopenCreate"
    assert mi["cudnnOnlyHip"].unsupported
    assert not hip_tables.all_mappings()["cudnnOnlyHip"].unsupported
    assert hip_tables.all_mappings(roc=True)["cudnnCreate"].target(roc=True) == "hipdnnCreate"


def test_version_selection(rules):
    plain = hip_tables.all_mappings()
    assert not plain["cudaBindTexture"].unsupported and not plain["cudaNewThing"].unsupported
    c12 = hip_tables.all_mappings(cuda_version="12.0")
    assert c12["cudaBindTexture"].unsupported and "removed in CUDA 12.0" in c12["cudaBindTexture"].note
    assert not hip_tables.all_mappings(cuda_version="11.8")["cudaBindTexture"].unsupported
    h61 = hip_tables.all_mappings(hip_version="6.1")
    assert h61["cudaNewThing"].unsupported and "from 6.2.0 on" in h61["cudaNewThing"].note
    assert not hip_tables.all_mappings(hip_version="6.2")["cudaNewThing"].unsupported
    assert not h61["cudaMalloc"].unsupported
    with pytest.raises(ValueError, match="not a version"):
        hip_tables.all_mappings(hip_version="six")


def test_check_mode_and_errors(checkout, rules, capsys):
    assert imp.main([str(checkout), "--rules", str(rules), "--check"]) == 0
    (rules / "cufft.csv").write_text("stale\n")
    assert imp.main([str(checkout), "--rules", str(rules), "--check"]) == 1
    assert (rules / "cufft.csv").read_text() == "stale\n"             # --check writes nothing
    assert imp.main([str(checkout / "nope"), "--rules", str(rules)]) == 2
    assert "cuport: error:" in capsys.readouterr().err


def test_bad_table_header_is_an_error(checkout, tmp_path, capsys):
    (checkout / "docs" / "tables" / "CUFFT_API_supported_by_HIP.md").write_text("## **1. X**\n|**CUDA**|**HIP**|\n")
    assert imp.main([str(checkout), "--rules", str(tmp_path / "out")]) == 2
    assert "unexpected table header" in capsys.readouterr().err


def test_repository_tables_record_their_source():
    for area in hip_tables.areas():
        if area == "cooperative_groups":
            assert hip_tables.source_revision(area) == ""
        else:
            assert hip_tables.source_revision(area).split()[0] == "ROCm/HIPIFY", area


def test_translate_flags_select_rows_and_layout():
    from porter.translate.hip.translator import translate
    src = "#include <cublas_v2.h>\n#include <cudnn.h>\nvoid f() { cudaBindTexture(0, 0, 0, 0, 0); cudnnHandle_t h; }\n"
    plain = translate("t.cu", src, portability_fixes=False)
    assert "hipBindTexture(" in plain.text and "<hipblas/hipblas.h>" in plain.text and "<hipDNN.h>" in plain.text
    old = translate("t.cu", src, portability_fixes=False, cuda_version="12.0", hip_version="5.1", miopen=True)
    assert "cudaBindTexture(" in old.text and "<hipblas.h>" in old.text
    assert "<miopen/miopen.h>" in old.text and "miopenHandle_t h;" in old.text
    d = [x for x in old.diagnostics if x.code == "CP907" and "cudaBindTexture" in x.message]
    assert d and "removed in CUDA 12.0" in d[0].message and d[0].row == 3
