"""Run by the doctor in a subprocess (by path, not as a module): imports torch and npusim the
way a user program would and prints what it found as one JSON object on the last line of
stdout. Anything can fail here (an undefined symbol, a CUDA torch, a real torch_npu): every
failure is caught and reported, never raised."""

import json
import os
import platform
import sys


def main():
    found = {"python": platform.python_version(), "executable": sys.executable}
    autoload = os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD")
    # Plain torch first, so that its version is known even when npusim cannot load.
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    try:
        import torch

        found["torch"] = {
            "version": torch.__version__,
            "cuda": getattr(torch.version, "cuda", None),
            "hip": getattr(torch.version, "hip", None),
            "file": torch.__file__,
        }
    except BaseException as error:  # noqa: BLE001
        found["torch_error"] = f"{type(error).__name__}: {error}"
        print(json.dumps(found))
        return
    finally:
        if autoload is None:
            os.environ.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
        else:
            os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = autoload
    try:
        import npusim

        found["npusim_file"] = npusim.__file__
        import torch_npu

        found["torch_npu_version"] = getattr(torch_npu, "__version__", None)
        found["torch_npu_file"] = getattr(torch_npu, "__file__", None)
        count = torch.npu.device_count()
        found["device_count"] = count
        found["device_names"] = [torch.npu.get_device_name(i) for i in range(count)]
        try:
            from npusim import _C

            found["chip"] = {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in dict(_C._chip_info()).items()}
        except BaseException as error:  # noqa: BLE001
            found["chip_error"] = f"{type(error).__name__}: {error}"
    except BaseException as error:  # noqa: BLE001
        found["npusim_error"] = f"{type(error).__name__}: {error}"
    print(json.dumps(found))


if __name__ == "__main__":
    main()
