"""The default generators of the simulated devices (contract §4)."""

import torch

import npusim  # noqa: F401
from npusim_testing.fresh_process import run_python


def test_manual_seed_reproducible():
    torch.npu.manual_seed(1234)
    first = torch.randn(8, device="npu").cpu()
    torch.npu.manual_seed(1234)
    second = torch.randn(8, device="npu").cpu()
    assert torch.equal(first, second)
    assert torch.npu.initial_seed() == 1234


def test_rng_state_round_trip():
    state = torch.npu.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    first = torch.rand(4, device="npu").cpu()
    torch.npu.set_rng_state(state)
    assert torch.equal(torch.rand(4, device="npu").cpu(), first)
    assert torch.equal(torch.npu.get_rng_state("npu:0"), torch.npu.get_rng_state(0))


def test_all_devices():
    torch.npu.manual_seed_all(7)
    states = torch.npu.get_rng_state_all()
    assert len(states) == torch.npu.device_count()
    assert all(torch.equal(states[0], s) for s in states)
    torch.npu.set_rng_state_all(states)
    assert torch.npu.default_generators[3].initial_seed() == 7
    assert len(torch.npu.default_generators) == torch.npu.device_count()
    assert torch.npu.default_generators[1].device == torch.device("npu:1")


def test_seed_and_seed_all():
    torch.npu.seed()
    first = torch.npu.initial_seed()
    torch.npu.seed_all()
    assert torch.npu.default_generators[0].initial_seed() == torch.npu.default_generators[5].initial_seed()
    assert isinstance(first, int)


def test_torch_manual_seed_reaches_npu():
    torch.manual_seed(99)
    assert torch.npu.initial_seed() == 99
    assert all(generator.initial_seed() == 99 for generator in torch.npu.default_generators)


def test_seed_before_initialization_is_queued():
    result = run_python(
        """
        import torch, npusim
        torch.npu.manual_seed_all(5)
        torch.npu.manual_seed(11)
        print(torch.npu.is_initialized())
        first = torch.randn(3, device="npu").cpu()
        print(torch.npu.initial_seed(), torch.npu.default_generators[1].initial_seed())
        torch.npu.manual_seed(11)
        print(torch.equal(first, torch.randn(3, device="npu").cpu()))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == ["False", "11 5", "True"]
