"""The doctor's tables and parsers, in process: compatibility lookups, torch_npu's visible-device
rule, environment validation and the explanations of known messages and codes."""

from __future__ import annotations

import tools_support  # noqa: F401  (puts the checkout's python/ on sys.path when built there)
from npusim_tools import npusim_data_dir, simulated_stack
from npusim_tools.compatibility import base_version, load_table, python_in_range, releases_for_pytorch, releases_for_torch_npu
from npusim_tools.doctor.environment import check_environment, parse_visible_devices
from npusim_tools.doctor.known_messages import explain_code, match_messages


def test_compatibility_table_lookups():
    table = load_table()
    assert len(table) == 40  # 26 active rows of §16.2, 13 end-of-life, the 2.13 pre-release
    assert releases_for_torch_npu("2.5.1.post1", table)[0].cann == "8.2.RC1"
    assert releases_for_torch_npu("2.13.0+npusim", table)[0].status == "prerelease"
    assert releases_for_torch_npu("2.1.0.post8", table)[0].status == "eol"
    assert releases_for_torch_npu("2.7.1.dev20250218", table)[0].pytorch == "2.7.1"  # a daily build: its line
    assert {r.torch_npu for r in releases_for_pytorch("2.9.0", table)} == {"2.9.0.post6", "2.9.0.post2", "2.9.0"}
    assert base_version("2.13.0rc1") == "2.13.0" and base_version("2.5.1.post1") == "2.5.1"
    row = releases_for_torch_npu("2.6.0", table)[0]
    assert python_in_range("3.11.7", row) is True and python_in_range("3.12.1", row) is False
    assert python_in_range("3.9.0", releases_for_torch_npu("2.1.0.post8", table)[0]) is None
    assert simulated_stack()["cann_version"] == releases_for_torch_npu("2.13.0+npusim", table)[0].cann


def test_visible_devices_follow_torch_npu_rules():
    assert parse_visible_devices(None, 4) == [0, 1, 2, 3]
    assert parse_visible_devices("0,2", 8) == [0, 2]
    assert parse_visible_devices("2,1", 8) == []           # not ascending: no device
    assert parse_visible_devices("1,x,3", 8) == [1]        # parsing stops at the first invalid element
    assert parse_visible_devices("1,9,2", 8) == []         # not ascending
    assert parse_visible_devices("1,3,9", 4) == [1, 3]     # an entry past the count ends the list


def test_environment_rules_use_torch_npu_texts():
    data = npusim_data_dir()
    checks = {c.name: c for c in check_environment({"ASCEND_GLOBAL_LOG_LEVEL": "7", "STREAMS_PER_DEVICE": "16",
                                                    "PYTORCH_NPU_ALLOC_CONF": "max_split_size_mb:10,bogus:1",
                                                    "PYTORCH_ALLOC_CONF": "expandable_segments:True",
                                                    "HCCL_EXEC_TIMEOUT": "1836", "HCCL_EVENT_TIMEOUT": "100",
                                                    "NPUSIM_HBM_SIZE": "lots", "NPUSIM_TORCH_NPU_VERSION": "2.13"}, data)}
    assert checks["variable ASCEND_GLOBAL_LOG_LEVEL"].summary.endswith("ASCEND_GLOBAL_LOG_LEVEL should be 0, 1, 2, 3 or 4.")
    assert "max_split_size_mb must be an integer above 20" in checks["variable PYTORCH_NPU_ALLOC_CONF"].summary
    assert "unknown key 'bogus'" in checks["variable PYTORCH_NPU_ALLOC_CONF"].summary
    assert checks["variable PYTORCH_ALLOC_CONF"].status == "fail"  # both set
    assert checks["variable HCCL_EVENT_TIMEOUT"].status == "warn"
    assert checks["variable NPUSIM_HBM_SIZE"].status == "fail"
    assert "variable NPUSIM_TORCH_NPU_VERSION" not in checks
    assert check_environment({}, data)[0].status == "pass"


def test_known_messages_and_codes():
    assert [m.key for m in match_messages("ImportError: libascendcl.so: cannot open shared object file")] == ["cann-not-sourced"]
    assert [m.key for m in match_messages("libtorch_npu.so: undefined symbol: _ZN5torch10ValueErrorC1EPKcz")] == ["torch-abi-mismatch"]
    assert "nnal-missing" in [m.key for m in match_messages("libatb.so: cannot open shared object file")]
    assert [m.key for m in match_messages("RuntimeError: Two accelerators cannot be used at the same time in PyTorch")] == ["cuda-torch"]
    assert explain_code("ERR01100") == "torch_npu ERR01100: OPS call acl api failed"
    assert explain_code("EI0002").startswith("CANN error EI0002: HCCL notify wait timeout")
    assert "The memory on the device is exhausted." in explain_code("207018")
    assert explain_code("123456") is None and explain_code("ERR77001") is None
