"""What the runtime checks of the AscendCL start-up configuration when it initializes, as
torch_npu does: the JSON file of TORCH_ACL_INIT_CONFIG_PATH and ACL_OP_INIT_MODE."""

from __future__ import annotations

import pytest

from npusim_testing.fresh_process import run_python

START = "import torch, torch_npu; torch_npu.npu.set_device(0); print('started')"


def _start_with_config(tmp_path, text: str | None):
    path = tmp_path / "acl.json"
    if text is not None:
        path.write_text(text)
    return run_python(START, extra_env={"TORCH_ACL_INIT_CONFIG_PATH": str(path)})


@pytest.mark.parametrize(
    "text, message",
    [
        (None, r"TORCH_ACL_INIT_CONFIG_PATH .*acl\.json is invalid\. Please set the environment variable "
               r"'TORCH_ACL_INIT_CONFIG_PATH' to a valid JSON config file path\.\n.*ERR00009 PTA resource unavailable"),
        ("", r"Failed to parse user acl json .*acl\.json\. Please check that the file contains valid JSON syntax\."),
        ("not a json{{{", r"Failed to parse user acl json"),
        ('{"dump":{"dump_scene":"lite_exception"}}',
         r"User acl json .*acl\.json lacks 'defaultDevice' object, required for lazy set_device mode\..*\n"
         r".*ERR00003 PTA invalid value"),
        ('{"defaultDevice":"not_an_object"}', r"lacks 'defaultDevice'"),
        ('{"defaultDevice":{"default_device":"1"}}', r"requires 'defaultDevice.default_device' to be \"0\""),
    ],
)
def test_a_bad_acl_init_config_stops_start_up(tmp_path, text, message):
    import re

    result = _start_with_config(tmp_path, text)
    assert result.returncode != 0 and "started" not in result.stdout
    assert re.search(message, result.stderr), result.stderr


def test_a_valid_acl_init_config_starts(tmp_path):
    result = _start_with_config(tmp_path, '{"dump":{"dump_scene":"lite_exception"},"defaultDevice":{"default_device":"0"}}')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"


def test_acl_op_init_mode_out_of_range_warns_and_uses_the_chip_default():
    result = run_python(START, extra_env={"ACL_OP_INIT_MODE": "999"})
    assert result.returncode == 0, result.stderr
    assert "Get env ACL_OP_INIT_MODE not in [0, 1, 2], so reset it to the default value 1." in result.stderr
    quiet = run_python(START, extra_env={"ACL_OP_INIT_MODE": "0"})
    assert quiet.returncode == 0 and "ACL_OP_INIT_MODE" not in quiet.stderr
    # The default depends on the chip: 0 before the 910B generation.
    on_910a = run_python(START, extra_env={"ACL_OP_INIT_MODE": "7", "NPUSIM_SOC": "Ascend910A"})
    assert on_910a.returncode == 0, on_910a.stderr
    assert "so reset it to the default value 0." in on_910a.stderr
