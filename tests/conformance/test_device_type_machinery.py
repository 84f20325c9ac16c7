"""PyTorch's device-generic test machinery picks up the npu device.

``common_device_type`` adds ``PrivateUse1TestBase`` to its test bases when the PrivateUse1 backend
is available at import time, so npusim is imported first. On PyTorch 2.13,
``instantiate_device_type_tests`` names the generated class after the base's device type before
``setUpClass`` runs (``...PRIVATEUSE1``) and the test methods after the backend name (``..._npu``,
``test_<name>_<op>_npu_<dtype>`` for ``@ops``).

The generated tests are collected by pytest from this module's globals and, in addition, run
programmatically below, so the check does not depend on how the file is collected.
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

try:  # an installed npusim wins; else the checkout's python/ folder
    import npusim  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    import npusim  # noqa: F401

import torch  # noqa: E402
from torch.testing._internal import common_device_type  # noqa: E402  (after npusim, see above)
from torch.testing._internal.common_device_type import (  # noqa: E402
    PrivateUse1TestBase,
    dtypes,
    instantiate_device_type_tests,
    onlyPRIVATEUSE1,
    ops,
)
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402
from torch.testing._internal.common_utils import TestCase  # noqa: E402

# What the generated tests saw, for the checks at the end of this module.
SEEN: dict[str, object] = {}


class TestNpuMachinery(TestCase):
    @onlyPRIVATEUSE1
    def test_device_string(self, device):
        SEEN["device"] = device
        x = torch.arange(4.0, device=device)
        self.assertEqual(x.device, torch.device("npu", 0))
        self.assertEqual((x * 2).cpu(), torch.arange(4.0) * 2)

    @dtypes(torch.float32, torch.int64)
    def test_dtype_parametrization(self, device, dtype):
        SEEN.setdefault("dtypes", set()).add(dtype)
        x = torch.ones(3, device=device, dtype=dtype)
        self.assertEqual(x.sum().item(), 3)

    @ops([op for op in op_db if op.name == "add"], allowed_dtypes=(torch.float32,))
    def test_opinfo_add(self, device, dtype, op):
        SEEN["op"] = op.name
        for sample in op.sample_inputs(device, dtype):
            result = op(sample.input, *sample.args, **sample.kwargs)
            self.assertEqual(result.device.type, "npu")
            expected = op(sample.input.cpu(), *[a.cpu() if isinstance(a, torch.Tensor) else a for a in sample.args],
                          **sample.kwargs)
            self.assertEqual(result.cpu(), expected, atol=0, rtol=0)


instantiate_device_type_tests(TestNpuMachinery, globals(), only_for="npu")

GENERATED_CLASS = "TestNpuMachineryPRIVATEUSE1"


def generated_class():
    return globals()[GENERATED_CLASS]


def test_privateuse1_base_registered():
    assert PrivateUse1TestBase in common_device_type.device_type_test_bases
    assert torch._C._get_privateuse1_backend_name() == "npu"


def test_only_npu_instantiated():
    assert "TestNpuMachineryCPU" not in globals()
    cls = generated_class()
    assert issubclass(cls, PrivateUse1TestBase)
    names = {name for name in dir(cls) if name.startswith("test_")}
    assert {"test_device_string_npu", "test_dtype_parametrization_npu_float32",
            "test_dtype_parametrization_npu_int64", "test_opinfo_add_add_npu_float32"} <= names


def test_generated_tests_run_on_npu0():
    SEEN.clear()
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(generated_class())
    result = unittest.TestResult()
    suite.run(result)
    assert result.wasSuccessful(), result.errors + result.failures
    assert result.testsRun == 4 and not result.skipped
    assert SEEN["device"] == "npu:0"
    assert generated_class().device_type == "npu"
    assert SEEN["dtypes"] == {torch.float32, torch.int64}
    assert SEEN["op"] == "add"
