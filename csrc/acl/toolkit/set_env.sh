# npusim's CANN toolkit environment, as CANN's set_env.sh sets it: source this file
#   source "$(npusim cann-home)/set_env.sh"
# and build and run AscendCL programs against the simulated NPU (see docs/cann-toolkit.md).
# The toolkit root is the directory of this file, wherever the npusim package is installed.
if [ -n "${BASH_SOURCE:-}" ]; then
    _npusim_cann_script="${BASH_SOURCE[0]}"
elif [ -n "${ZSH_VERSION:-}" ]; then
    # shellcheck disable=SC2296
    _npusim_cann_script="${(%):-%x}"
else
    _npusim_cann_script="$0"
fi
_npusim_cann_root="$(cd "$(dirname "${_npusim_cann_script}")" >/dev/null 2>&1 && pwd)"

export ASCEND_TOOLKIT_HOME="${_npusim_cann_root}"
export ASCEND_HOME_PATH="${_npusim_cann_root}"
export ASCEND_AICPU_PATH="${_npusim_cann_root}"
export ASCEND_OPP_PATH="${_npusim_cann_root}/opp"
export TOOLCHAIN_HOME="${_npusim_cann_root}/toolkit"
export LD_LIBRARY_PATH="${_npusim_cann_root}/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
# The aclnn library (libopapi) runs PyTorch's CPU kernels: in an installed wheel torch sits
# next to the npusim package; its directory is added so that programs find it.
if [ -d "${_npusim_cann_root}/../../torch/lib" ]; then
    _npusim_torch_lib="$(cd "${_npusim_cann_root}/../../torch/lib" && pwd)"
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH}:${_npusim_torch_lib}"
    unset _npusim_torch_lib
fi
export PATH="${_npusim_cann_root}/bin${PATH:+:${PATH}}"
unset _npusim_cann_script _npusim_cann_root
