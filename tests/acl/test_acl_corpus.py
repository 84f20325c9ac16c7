"""The AscendCL face of npusim for C and C++ programs (csrc/acl, docs/cann-toolkit.md).

Builds the corpus of C and C++ programs in tests/acl/corpus against the CANN toolkit tree the
way CANN programs build (CMake with ASCEND_CANN_PACKAGE_PATH, ascendc.cmake included, -Wall
-Wextra -Werror, the old C++ ABI), runs each in a clean environment, and checks the tree
itself: set_env.sh, ``npusim cann-home``, the plain ``g++ ... -lascendcl`` build of the quick
start, plog lines of failures, and the clear refusal of Ascend C kernels.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from npusim_testing.fresh_process import subprocess_env

from npusim_tools.cann_home import cann_home

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
PROGRAMS = ["device_memory", "streams_events", "callbacks", "errors", "contexts", "model_capture"]
# The aclnn operator programs: in every tree built with npusim's PyTorch backend (libopapi).
ACLNN_PROGRAMS = ["aclnn_elementwise", "aclnn_matmul", "aclnn_norm", "aclnn_reduction", "aclnn_embedding_rope",
                  "aclnn_attention", "aclnn_contract", "aclnn_capture"]

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None,
                                reason="the AscendCL corpus needs cmake and a C++ compiler")


@pytest.fixture(scope="module")
def toolkit() -> Path:
    return Path(cann_home())


def clean_environment(tmp_path: Path, toolkit: Path) -> dict[str, str]:
    """What `source set_env.sh` gives, without any npusim or Ascend setting of the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPUSIM_", "ASCEND_", "PYTORCH_NPU"))}
    env.update(sourced_set_env(toolkit, env))
    env["NPUSIM_RUNTIME_DIR"] = str(tmp_path / "runtime")
    env["ASCEND_PROCESS_LOG_PATH"] = str(tmp_path / "log")
    return env


def sourced_set_env(toolkit: Path, env: dict[str, str]) -> dict[str, str]:
    result = subprocess.run(["bash", "-c", f'source "{toolkit}/set_env.sh" && env -0'], env=env,
                            capture_output=True, check=True)
    pairs = (item.split("=", 1) for item in result.stdout.decode().split("\0") if "=" in item)
    return dict(pairs)


@pytest.fixture(scope="module")
def corpus_build(toolkit: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("acl-corpus")
    configure = subprocess.run(["cmake", "-S", str(CORPUS), "-B", str(build), f"-DASCEND_CANN_PACKAGE_PATH={toolkit}"],
                               capture_output=True, text=True)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    compile_ = subprocess.run(["cmake", "--build", str(build), "-j2"], capture_output=True, text=True)
    assert compile_.returncode == 0, compile_.stdout + compile_.stderr
    return build


def test_set_env_sets_the_cann_variables(toolkit: Path):
    env = sourced_set_env(toolkit, {"PATH": os.environ["PATH"], "LD_LIBRARY_PATH": "/opt/other"})
    assert env["ASCEND_TOOLKIT_HOME"] == str(toolkit)
    assert env["ASCEND_HOME_PATH"] == str(toolkit)
    assert env["ASCEND_OPP_PATH"] == str(toolkit / "opp")
    assert env["ASCEND_AICPU_PATH"] == str(toolkit)
    assert env["LD_LIBRARY_PATH"].split(":")[:2] == [str(toolkit / "lib64"), "/opt/other"]


def test_cann_home_command_prints_the_tree(toolkit: Path):
    result = subprocess.run([sys.executable, "-c", "import sys; from npusim_tools.launcher import main; sys.exit(main(['cann-home']))"],
                            capture_output=True, text=True, env=subprocess_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(toolkit)
    assert (toolkit / "include" / "acl" / "acl.h").is_file()
    assert (toolkit / "lib64" / "libascendcl.so").is_file()


def test_tree_reports_the_simulated_cann_version(toolkit: Path):
    info = next(toolkit.glob("*-linux/ascend_toolkit_install.info")).read_text()
    from npusim_tools import simulated_stack

    assert f"version={simulated_stack()['cann_version']}\n" in info


@pytest.mark.parametrize("program", PROGRAMS + ACLNN_PROGRAMS)
def test_corpus_program(program: str, corpus_build: Path, toolkit: Path, tmp_path: Path):
    result = subprocess.run([str(corpus_build / program)], env=clean_environment(tmp_path, toolkit),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{program}: PASS" in result.stdout


def test_failures_are_logged_to_plog(corpus_build: Path, toolkit: Path, tmp_path: Path):
    env = clean_environment(tmp_path, toolkit)
    result = subprocess.run([str(corpus_build / "errors")], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    plogs = list((tmp_path / "log" / "debug" / "plog").glob("plog-*.log"))
    assert len(plogs) == 1
    text = plogs[0].read_text()
    assert re.search(r"^\[ERROR\] RUNTIME\(\d+,errors\):.* aclrtSetDevice: .*invalid device.*\[ErrorCode=107001\]$",
                     text, re.MULTILINE), text
    assert re.search(r"^\[ERROR\] ASCENDCL\(\d+,errors\):.* aclrtMalloc: size must be greater than 0 \[ErrorCode=100000\]$",
                     text, re.MULTILINE), text


QUICK_START = textwrap.dedent("""\
    #include <stdio.h>
    #include "acl/acl.h"
    int main(void) {
        aclInit(NULL);
        aclrtSetDevice(0);
        void *device = NULL;
        float host[4] = {1, 2, 3, 4}, back[4] = {0};
        aclrtMalloc(&device, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST);
        aclrtMemcpy(device, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
        aclrtMemcpy(back, sizeof back, device, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST);
        printf("%s %.0f\\n", aclrtGetSocName(), back[3]);
        aclrtFree(device);
        aclrtResetDevice(0);
        return aclFinalize();
    }
""")


def test_plain_compiler_command_after_set_env(toolkit: Path, tmp_path: Path):
    """The README's quick start: source set_env.sh, then the usual -I/-L flags."""
    (tmp_path / "main.cpp").write_text(QUICK_START)
    script = (f'source "{toolkit}/set_env.sh" && c++ -Wall -Wextra -Werror -D_GLIBCXX_USE_CXX11_ABI=0 main.cpp '
              f'-I"$ASCEND_TOOLKIT_HOME/include" -L"$ASCEND_TOOLKIT_HOME/lib64" -lascendcl -o main && ./main')
    env = clean_environment(tmp_path, toolkit)
    result = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "Ascend910B2 4"


def test_ascendc_kernels_are_refused_clearly(toolkit: Path, tmp_path: Path):
    source = tmp_path / "project"
    source.mkdir()
    (source / "kernel.cpp").write_text("// an Ascend C kernel\n")
    (source / "CMakeLists.txt").write_text(textwrap.dedent(f"""\
        cmake_minimum_required(VERSION 3.16)
        project(kernel_sample LANGUAGES CXX)
        set(ASCENDC_CMAKE_DIR {toolkit}/tools/tikcpp/ascendc_kernel_cmake)
        include(${{ASCENDC_CMAKE_DIR}}/ascendc.cmake)
        ascendc_library(kernels STATIC kernel.cpp)
    """))
    result = subprocess.run(["cmake", "-S", str(source), "-B", str(tmp_path / "build")], capture_output=True, text=True)
    assert result.returncode != 0
    assert "npusim cannot compile Ascend C kernels" in result.stderr


ACLNN_QUICK_START = textwrap.dedent("""\
    #include <cstdio>
    #include <vector>
    #include "acl/acl.h"
    #include "aclnnop/aclnn_add.h"
    int main() {
        aclInit(nullptr);
        aclrtSetDevice(0);
        aclrtStream stream = nullptr;
        aclrtCreateStream(&stream);
        std::vector<int64_t> shape = {2, 2};
        std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40}, c(4);
        void *da = nullptr, *db = nullptr, *dc = nullptr;
        aclrtMalloc(&da, 16, ACL_MEM_MALLOC_HUGE_FIRST);
        aclrtMalloc(&db, 16, ACL_MEM_MALLOC_HUGE_FIRST);
        aclrtMalloc(&dc, 16, ACL_MEM_MALLOC_HUGE_FIRST);
        aclrtMemcpy(da, 16, a.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE);
        aclrtMemcpy(db, 16, b.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE);
        aclTensor *x = aclCreateTensor(shape.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, shape.data(), 2, da);
        aclTensor *y = aclCreateTensor(shape.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, shape.data(), 2, db);
        aclTensor *z = aclCreateTensor(shape.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, shape.data(), 2, dc);
        float one = 1.0f;
        aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);
        uint64_t workspaceSize = 0;
        aclOpExecutor *executor = nullptr;
        aclnnAddGetWorkspaceSize(x, y, alpha, z, &workspaceSize, &executor);
        aclnnAdd(nullptr, workspaceSize, executor, stream);
        aclrtSynchronizeStream(stream);
        aclrtMemcpy(c.data(), 16, dc, 16, ACL_MEMCPY_DEVICE_TO_HOST);
        printf("%g %g %g %g\\n", c[0], c[1], c[2], c[3]);
        aclDestroyTensor(x);
        aclDestroyTensor(y);
        aclDestroyTensor(z);
        aclDestroyScalar(alpha);
        aclrtFree(da);
        aclrtFree(db);
        aclrtFree(dc);
        aclrtDestroyStream(stream);
        aclrtResetDevice(0);
        return aclFinalize();
    }
""")


def test_aclnn_quick_start_with_g_plus_plus(toolkit: Path, tmp_path: Path):
    """The issue's bar: source set_env.sh, then g++ main.cpp -lascendcl -lopapi."""
    (tmp_path / "main.cpp").write_text(ACLNN_QUICK_START)
    script = (f'source "{toolkit}/set_env.sh" && g++ -Wall -Wextra -Werror -D_GLIBCXX_USE_CXX11_ABI=0 main.cpp '
              f'-I"$ASCEND_TOOLKIT_HOME/include" -L"$ASCEND_TOOLKIT_HOME/lib64" -lascendcl -lopapi -o main && ./main')
    env = clean_environment(tmp_path, toolkit)
    result = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "11 22 33 44"


def test_tree_ships_the_aclnn_names_programs_link(toolkit: Path):
    lib64 = toolkit / "lib64"
    assert (lib64 / "libopapi.so").is_file()
    for script in ("libnnopbase.so", "libopapi_math.so", "libopapi_nn.so"):
        assert "INPUT(libopapi.so)" in (lib64 / script).read_text()
    for header in ("aclnn/acl_meta.h", "aclnn/aclnn_base.h", "aclnnop/aclnn_add.h", "aclnnop/aclnn_matmul.h",
                   "aclnnop/aclnn_flash_attention_score.h"):
        assert (toolkit / "include" / header).is_file()


def test_aclnn_headers_compile_warning_free_in_c(toolkit: Path, tmp_path: Path):
    headers = sorted(p.relative_to(toolkit / "include").as_posix() for p in (toolkit / "include" / "aclnnop").glob("*.h"))
    source = "".join(f'#include "{h}"\n' for h in headers) + "int main(void) { return ACLNN_SUCCESS; }\n"
    (tmp_path / "headers.c").write_text(source)
    result = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", "headers.c",
                             f"-I{toolkit / 'include'}"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_aclnn_failures_are_logged_to_plog(corpus_build: Path, toolkit: Path, tmp_path: Path):
    env = clean_environment(tmp_path, toolkit)
    result = subprocess.run([str(corpus_build / "aclnn_contract")], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    text = next((tmp_path / "log" / "debug" / "plog").glob("plog-*.log")).read_text()
    assert re.search(r"^\[ERROR\] OP\(\d+,aclnn_contract\):.* aclnnMul: the executor is not live.*"
                     r"\[ErrorCode=161002\]$", text, re.MULTILINE), text
    assert re.search(r"^\[ERROR\] OP\(\d+,aclnn_contract\):.* aclnnMulGetWorkspaceSize: executor must not be nullptr "
                     r"\[ErrorCode=161001\]$", text, re.MULTILINE), text
