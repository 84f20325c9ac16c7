"""The dump.json record of a value, as msprobe writes it.

A tensor becomes ``{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [...], "Max", "Min",
"Mean", "Norm", "requires_grad"}`` (``"md5"`` with ``summary_mode: md5``, ``"data_name"`` when
the task is ``tensor``). The statistics follow msprobe's ``get_stat_info``: Max and Min in the
tensor's own dtype, Mean and Norm for floating tensors other than float64 (in their dtype), Max =
``any`` and Min = ``all`` for bool, all four = the value for a 0-d tensor, nothing for an empty
tensor. They are computed where the tensor lives (on the simulated NPU: npu kernels) with
autocast off, and read back in one transfer.

Python values become ``{"type": "int", "value": 3}``, slices ``{"type": "slice", "value":
[start, stop, step]}``, ``torch.Size`` ``{"type": "torch.Size", "value": [...]}``; a keyword
``device`` / ``dtype`` argument ``{"type": "torch.device", "value": "npu:0"}`` /
``{"type": "torch.dtype", "value": "torch.float16"}``; lists, tuples, named tuples and dicts are
walked; anything else is ``null``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import zlib
from typing import Any, Callable

import torch

__all__ = ["ValueSummarizer", "tensor_statistics", "crc32_of_tensor"]

_MAX_DEPTH = 400


def _autocast_off(device_type: str):
    try:
        return torch.autocast(device_type, enabled=False)
    except RuntimeError:
        return torch.autocast("cpu", enabled=False)


def tensor_statistics(tensor: torch.Tensor, precision: str = "low") -> list[Any]:
    """``[Max, Min, Mean, Norm]`` of ``tensor`` as msprobe computes them (None where msprobe
    leaves a statistic out)."""
    data = tensor.detach()
    if data.is_meta or data.numel() == 0:
        return [None, None, None, None]
    with torch.no_grad(), _autocast_off(data.device.type):
        if data.is_complex():
            magnitude = data.abs().double()
            values = torch.stack([magnitude.max(), magnitude.min(), magnitude.mean()]).tolist()
            return values + [None]
        if data.dtype == torch.bool:
            flags = torch.stack([data.any(), data.all()]).tolist()
            return [flags[0], flags[1], None, None]
        if data.dim() == 0:
            value = data.item()
            return [value, value, value, value]
        if data.is_floating_point() and data.dtype != torch.float64:
            if precision == "high":
                wide = data.double()
                low = torch.stack([data.max(), data.min()]).tolist()
                return low + torch.stack([wide.mean(), torch.linalg.vector_norm(wide)]).tolist()
            return torch.stack([data.max(), data.min(), data.mean(), torch.norm(data)]).tolist()
        return torch.stack([data.max(), data.min()]).tolist() + [None, None]


def crc32_of_tensor(tensor: torch.Tensor) -> str:
    """CRC-32 of the tensor's raw bytes in its own dtype (msprobe's ``md5`` summary)."""
    data = tensor.detach().cpu().contiguous()
    size = data.numel() * data.element_size()
    if size == 0:
        return f"{zlib.crc32(b''):08x}"
    raw = ctypes.string_at(data.data_ptr(), size)
    return f"{zlib.crc32(raw):08x}"


@dataclasses.dataclass
class ValueSummarizer:
    """Turns arguments and results into dump.json records.

    ``save_tensor(tensor, data_name) -> bool`` writes the tensor file in task ``tensor``; it is
    None in task ``statistics``.
    """

    precision: str = "low"
    summary_mode: str = "statistics"
    save_tensor: Callable[[torch.Tensor, str], bool] | None = None
    # How a torch.device argument is written; the benchmark run writes the device the NPU run
    # had (its npu tensors live on the CPU, so ``x.device`` says cpu there).
    device_text: Callable[[torch.device], str] | None = None

    def summarize(self, value: Any, name_prefix: str | None) -> Any:
        """The record of ``value``; ``name_prefix`` (``"Functional.linear.0.forward.input"``) names
        the tensor files: the prefix, the position of each tensor (``.0``, ``.1.2``, ``.key``) and
        ``.pt``. A prefix without positions (a parameter's gradient) names the file itself."""
        return self._walk(value, [], name_prefix, 0)

    def _walk(self, value: Any, keys: list, prefix: str | None, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            return None
        if keys and keys[-1] == "device" and isinstance(value, (torch.device, str, int)):
            if isinstance(value, torch.device) and self.device_text is not None:
                return {"type": "torch.device", "value": self.device_text(value)}
            return {"type": "torch.device", "value": self._device_text(value)}
        if keys and keys[-1] in ("dtype", "output_dtype") and isinstance(value, torch.dtype):
            return {"type": "torch.dtype", "value": str(value)}
        if isinstance(value, torch.Tensor):
            return self._tensor(value, keys, prefix)
        if isinstance(value, (bool, int, float, str)):
            return {"type": type(value).__name__, "value": value}
        if isinstance(value, slice):
            return {"type": "slice", "value": [self._slice_part(part) for part in (value.start, value.stop, value.step)]}
        if value is Ellipsis:
            return {"type": "ellipsis", "value": "..."}
        if isinstance(value, torch.Size):
            return {"type": "torch.Size", "value": [int(size) for size in value]}
        if isinstance(value, torch.memory_format):
            return {"type": "torch.memory_format", "format": str(value).replace("torch.", "")}
        # msprobe writes a positional device or dtype as {}; npusim writes it as msprobe writes a
        # keyword one, so that the explanation can call the operator again.
        if isinstance(value, torch.dtype):
            return {"type": "torch.dtype", "value": str(value)}
        if isinstance(value, torch.device):
            return {"type": "torch.device", "value": self.device_text(value) if self.device_text else
                    self._device_text(value)}
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return self._walk_dict({field: getattr(value, field) for field in value._fields}, keys, prefix, depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._walk_dict({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, keys, prefix,
                                   depth)
        if isinstance(value, (list, tuple)):
            result = []
            for index, item in enumerate(value):
                keys.append(index)
                try:
                    result.append(self._walk(item, keys, prefix, depth + 1))
                finally:
                    keys.pop()
            return result
        if isinstance(value, dict):
            return self._walk_dict(value, keys, prefix, depth)
        type_name = type(value).__module__
        if type_name == "numpy" or type_name.startswith("numpy."):
            return self._numpy(value)
        return None

    def _walk_dict(self, value: dict, keys: list, prefix: str | None, depth: int) -> dict:
        result = {}
        for key, item in value.items():
            keys.append(key)
            try:
                result[key] = self._walk(item, keys, prefix, depth + 1)
            finally:
                keys.pop()
        return result

    @staticmethod
    def _device_text(value: Any) -> Any:
        if isinstance(value, torch.device):
            return f"{value.type}:{value.index}"
        return value

    @staticmethod
    def _slice_part(part: Any) -> Any:
        if part is None:
            return None
        try:
            return int(part)
        except (TypeError, ValueError):
            return None

    @staticmethod
    def _numpy(value: Any) -> Any:
        if hasattr(value, "shape") and getattr(value, "ndim", 0) > 0:
            record: dict[str, Any] = {"type": "numpy.ndarray", "dtype": str(value.dtype), "shape": list(value.shape)}
            try:
                tensor = torch.from_numpy(value.astype("float64"))
                record.update({"Max": tensor.max().item(), "Min": tensor.min().item(), "Mean": tensor.mean().item(),
                               "Norm": torch.linalg.vector_norm(tensor).item()})
            except Exception:
                record.update({"Max": None, "Min": None, "Mean": None, "Norm": None})
            return record
        try:
            return {"type": type(value).__name__, "value": value.item()}
        except Exception:
            return None

    def _tensor(self, tensor: torch.Tensor, keys: list, prefix: str | None) -> dict[str, Any]:
        record: dict[str, Any] = {"type": "torch.Tensor", "dtype": str(tensor.dtype), "shape": list(tensor.shape)}
        if self.summary_mode != "xor":
            maximum, minimum, mean, norm = tensor_statistics(tensor, self.precision)
            record.update({"Max": maximum, "Min": minimum, "Mean": mean, "Norm": norm})
        record["requires_grad"] = bool(tensor.requires_grad)
        if self.summary_mode == "md5":
            record["md5"] = crc32_of_tensor(tensor)
        if self.save_tensor is not None and prefix is not None:
            suffix = ".".join(str(key) for key in keys)
            data_name = f"{prefix}.{suffix}.pt" if suffix else f"{prefix}.pt"
            if self.save_tensor(tensor, data_name):
                record["data_name"] = data_name
        return record
