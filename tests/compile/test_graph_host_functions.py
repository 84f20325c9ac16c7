"""Host functions of a stream (torch.npu._launch_host_func / _launch_host_func_pending) and the
NPUGraph debugging operators (torch.ops.npu.print_npugraph_tensor / save_npugraph_tensor): run
at once outside a capture, at their place in every replay inside one."""

import os

import torch

import npusim  # noqa: F401
import torch_npu
import torch_npu.npu.graphs as npu_graphs


def test_host_function_runs_now_outside_and_at_every_replay_inside_a_capture():
    calls = []
    stream = torch.npu.Stream()
    torch.npu._subscribe_report(stream)
    torch.npu._launch_host_func(stream, calls.append, "eager")
    assert calls == ["eager"]
    x = torch.zeros(3, device="npu")
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph, stream=stream):
        x.add_(1)
        torch.npu._launch_host_func(stream, lambda data: calls.append(float(data.cpu()[0])), x)
        x.add_(1)
    assert calls == ["eager"]  # captured, not run
    x.zero_()  # (npusim's capture also ran the adds)
    assert ("_launch_host_func" in dict(graph.replay_plan)) or "host function" in dict(graph.replay_plan).values()
    graph.replay()
    graph.replay()
    # It sees the graph's first add of each replay, not the second.
    assert calls == ["eager", 1.0, 3.0]
    torch.npu._unsubscribe_report(stream)


def test_pending_host_function_reads_pointer_specs_when_it_runs():
    seen = []
    host = torch.arange(4, dtype=torch.float32)
    spec = npu_graphs._make_npugraph_tensor_ptr_spec(host)
    assert spec[0] == npu_graphs._NPUGRAPH_TENSOR_PTR_SPEC_MARKER and spec[2] == 16

    def record(label, tensor_arg):
        seen.append((label, npu_graphs._materialize_npugraph_tensor_arg(tensor_arg).clone()))

    torch.npu._launch_host_func_pending(torch.npu.current_stream(), record, ("a", spec))
    assert seen[0][0] == "a" and torch.equal(seen[0][1], host)


def test_print_and_save_npugraph_tensor_at_replay(tmp_path, capsys):
    x = torch.arange(6, dtype=torch.float32, device="npu").reshape(2, 3)
    path = str(tmp_path / "t.pt")
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        x.mul_(2)
        torch.ops.npu.print_npugraph_tensor(x, tensor_name="x")
        torch.ops.npu.save_npugraph_tensor(x, save_path=path)
        torch_npu.save_npugraph_tensor(x, save_path=path, overwrite=True)
    assert capsys.readouterr().out == ""  # nothing at capture
    x.copy_(torch.arange(6, dtype=torch.float32).reshape(2, 3))  # (npusim's capture also ran mul_)
    graph.replay()
    out = capsys.readouterr().out
    assert "x=tensor([[ 0.,  2.,  4.]," in out and "shape=(2, 3), dtype=torch.float32" in out
    index = x.device.index
    # The numbered name was fixed at capture: every replay writes it again.
    numbered = tmp_path / f"t_device_{index}_0.pt"
    assert torch.equal(torch.load(numbered), torch.arange(6.0).reshape(2, 3) * 2)
    graph.replay()
    assert torch.equal(torch.load(numbered), torch.arange(6.0).reshape(2, 3) * 4)
    assert torch.equal(torch.load(tmp_path / f"t_device_{index}.pt"), torch.arange(6.0).reshape(2, 3) * 4)
    assert not (tmp_path / f"t_device_{index}_1.pt").exists()
    # Eagerly, and a tensor list.
    torch.ops.npu.save_npugraph_tensor.tensor_list([x, x[0]], save_path=path)
    saved = torch.load(tmp_path / f"t_device_{index}_1.pt")
    assert len(saved) == 2 and torch.equal(saved[1], x[0].cpu())
    assert os.path.basename(npu_graphs._build_save_npugraph_tensor_path(None, None, False)).startswith("tensor_")
