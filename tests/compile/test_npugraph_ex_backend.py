"""``torch.compile(model, backend="npugraph_ex")`` and ``torch.npu.npugraph_ex``, as torch_npu's
own tests at the 2.13 tag use them (test/dynamo/test_npugraph_ex.py): the backend with options,
``compile_fx`` inside a custom AOT backend, FX replacements registered by the program, and
TorchAir's ``CompilerConfig.mode = "npugraph_ex"``."""

import functools

import pytest
import torch
import torch_npu
from torch._functorch.aot_autograd import aot_module_simplified
from torch._subclasses.fake_tensor import FakeTensorMode

from npusim.compile import npu_graph_trees


pytestmark = pytest.mark.usefixtures("fresh_npu_graphs")


class _Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def _ones():
    return (torch.ones(1, dtype=torch.int32, device="npu"), torch.ones(1, dtype=torch.int32, device="npu"))


def test_the_three_torch_npu_backends_are_registered():
    assert {"npu", "npugraph_ex", "npugraphs"} <= set(torch.compiler.list_backends(exclude_tags=None))


def test_backend_with_options_captures_and_replays():
    compiled = torch.compile(_Add().npu(), backend="npugraph_ex", options={"clone_input": False}, fullgraph=True,
                             dynamic=False)
    x, y = _ones()
    results = [compiled(x, y).item() for _ in range(3)]
    assert results == [2, 2, 2]
    assert npu_graph_trees.stats == {"captured": 1, "replayed": 1, "warmups": 1, "eager": 0}


def test_without_clone_input_new_input_addresses_capture_a_new_graph():
    compiled = torch.compile(_Add().npu(), backend="npugraph_ex", options={"clone_input": False}, dynamic=False)
    with torch.no_grad():
        for value in range(3):
            x = torch.full((4,), float(value), device="npu")
            assert compiled(x, x).cpu().tolist() == [2.0 * value] * 4
    # Every call had inputs at other addresses: each is a first call of its own graph.
    assert npu_graph_trees.stats["replayed"] == 0
    npu_graph_trees.reset_stats()
    torch._dynamo.reset()
    compiled = torch.compile(_Add().npu(), backend="npugraph_ex", dynamic=False)  # clone_input: True
    with torch.no_grad():
        for value in range(4):
            x = torch.full((4,), float(value), device="npu")
            assert compiled(x, x).cpu().tolist() == [2.0 * value] * 4
    assert npu_graph_trees.stats == {"captured": 1, "replayed": 2, "warmups": 1, "eager": 0}


def test_options_are_checked():
    compiled = torch.compile(_Add().npu(), backend="npugraph_ex", options={"clone_input": "no"})
    with pytest.raises(Exception, match="npugraph_ex option 'clone_input' must be bool"):
        compiled(*_ones())
    torch._dynamo.reset()
    compiled = torch.compile(_Add().npu(), backend="npugraph_ex", options={"static_kernel_compile": True})
    with pytest.warns(UserWarning, match="static_kernel_compile have no effect"):
        assert compiled(*_ones()).item() == 2


def test_compile_fx_in_a_custom_aot_backend():
    def custom_compiler(gm, example_inputs):
        return torch.npu.npugraph_ex.compile_fx(gm, example_inputs)

    def custom_compiler_with_options(gm, example_inputs):
        return torch.npu.npugraph_ex.compile_fx(gm, example_inputs, {"clone_input": False})

    for compiler in (custom_compiler, custom_compiler_with_options):
        torch._dynamo.reset()

        def backend(gm, example_inputs, compiler=compiler):
            return aot_module_simplified(gm, example_inputs, fw_compiler=compiler)

        compiled = torch.compile(_Add().npu(), backend=backend, fullgraph=True, dynamic=False)
        assert compiled(*_ones()).item() == 2


def test_registered_replacement_rewrites_the_graph():
    from torch._dynamo.utils import counters

    def search_fn(x1, x2, gamma):
        x_out = torch.add(x1, x2)
        y, _ = torch_npu.npu_rms_norm(x_out, gamma)
        return y, x_out

    def replace_fn(x1, x2, gamma):
        y, _, x_out = torch_npu.npu_add_rms_norm(x1, x2, gamma)
        return y, x_out

    def extra_check(match):
        x1 = match.kwargs.get("x1")
        return x1 is not None and x1.meta["val"].shape[-1] == 7168

    with FakeTensorMode():
        hidden = functools.partial(torch.empty, (1, 1, 2), dtype=torch.float16, device="npu")
        weight = functools.partial(torch.empty, 2, dtype=torch.float16, device="npu")
        torch.npu.npugraph_ex.register_replacement(search_fn=search_fn, replace_fn=replace_fn,
                                                   example_inputs=(hidden(), hidden(), weight()),
                                                   extra_check=extra_check)

    class Model(torch.nn.Module):
        def forward(self, data1, data2, gamma):
            x_out = torch.add(data1, data2)
            y, _ = torch_npu.npu_rms_norm(x_out, gamma)
            return torch.abs(y), torch.sqrt(x_out)

    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randn(1, 1, size, generator=generator, dtype=torch.float16).to("npu") for size in (7168, 7168)]
    gamma = torch.randn(7168, generator=generator, dtype=torch.float16).to("npu")
    counters.clear()
    compiled = torch.compile(Model().npu(), backend="npugraph_ex", fullgraph=True, dynamic=False)
    result = compiled(*inputs, gamma)
    assert counters["inductor"]["pattern_matcher_count"] == 1  # npu_add_rms_norm replaced add + npu_rms_norm
    expected = Model()(*inputs, gamma)
    assert result[0].shape[2] == 7168 and result[1].shape[2] == 7168
    torch.testing.assert_close(result[0].cpu(), expected[0].cpu())
    torch.testing.assert_close(result[1].cpu(), expected[1].cpu(), equal_nan=True)
    # A shape the extra check refuses is compiled as written.
    counters.clear()
    torch._dynamo.reset()
    small = [torch.randn(1, 1, 64, dtype=torch.float16).to("npu") for _ in range(2)]
    torch.compile(Model().npu(), backend="npugraph_ex", dynamic=False)(*small, torch.ones(64, dtype=torch.float16).to("npu"))
    assert counters["inductor"]["pattern_matcher_count"] == 0


def test_torchair_mode_npugraph_ex_is_that_backend():
    import torchair

    config = torchair.CompilerConfig()
    config.mode = "npugraph_ex"
    backend = torchair.get_npu_backend(compiler_config=config)
    compiled = torch.compile(_Add().npu(), backend=backend, dynamic=False)
    x, y = _ones()
    assert [compiled(x, y).item() for _ in range(3)] == [2, 2, 2]
    assert npu_graph_trees.stats["captured"] == 1
