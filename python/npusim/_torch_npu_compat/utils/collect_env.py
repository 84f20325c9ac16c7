"""``torch_npu.utils.collect_env``: the environment report of torch_npu, minimal.

``python -m torch_npu.utils.collect_env`` prints PyTorch's environment report with the torch_npu
version and the CANN version added, as torch_npu's does. ``get_cann_version()`` reads the
``version=`` line of an ``ascend_*_install.info`` file under ``$ASCEND_HOME_PATH`` when that
variable names a CANN install; without one it reports the CANN version that npusim simulates.
(npusim's full environment report is ``npusim collect-env``.)
"""

from __future__ import annotations

from npusim.npu.versions import installed_cann_version

__all__ = ["get_cann_version", "get_env_info", "get_pretty_env_info", "main"]


def get_cann_version() -> str:
    return installed_cann_version()


def get_env_info():
    from torch.utils import collect_env as torch_collect_env

    return torch_collect_env.get_env_info()


def get_pretty_env_info() -> str:
    from torch.utils import collect_env as torch_collect_env

    import torch_npu

    text = torch_collect_env.get_pretty_env_info()
    lines = text.split("\n")
    for number, line in enumerate(lines):
        if line.startswith("PyTorch version:"):
            lines.insert(number + 1, f"Torch-npu version: {torch_npu.__version__}")
            break
    return "\n".join(lines) + f"\n\nCANN:\n{get_cann_version()}"


def main() -> None:
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
