"""fork(): the child of a process that used npu is a "bad fork" (torch_npu's text), and a child
forked while other threads run npu operators never deadlocks on a lock held at fork time."""

from __future__ import annotations

BAD_FORK = "Cannot re-initialize NPU in forked subprocess"


def test_forked_child_cannot_use_parent_tensor(python_runner):
    result = python_runner(
        r"""
import os, torch, npusim
x = torch.ones(4, device="npu")
pid = os.fork()
if pid == 0:
    code = 3
    try:
        (x + 1).cpu()
        code = 1
    except RuntimeError as e:
        code = 0 if "Cannot re-initialize NPU in forked subprocess" in str(e) else 2
    try:
        torch.zeros(2, device="npu")
        code = code or 4
    except RuntimeError as e:
        code = code or (0 if "Cannot re-initialize NPU" in str(e) else 5)
    code = code or (0 if torch.npu._is_in_bad_fork() else 6)
    os._exit(code)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
print("parent", (x + 1).sum().item())
""",
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "child 0" in result.stdout, result.stdout
    assert "parent 8.0" in result.stdout


def test_dataloader_worker_touching_device_memory_fails(python_runner):
    result = python_runner(
        r"""
import torch, npusim
weights = torch.ones(3, device="npu")
class Data(torch.utils.data.Dataset):
    def __len__(self): return 2
    def __getitem__(self, i): return (weights * i).cpu()
loader = torch.utils.data.DataLoader(Data(), num_workers=1, multiprocessing_context="fork")
try:
    list(loader)
    print("no error")
except RuntimeError as e:
    print("error:", "Cannot re-initialize NPU in forked subprocess" in str(e))
""",
        timeout=90,
    )
    assert "error: True" in result.stdout, (result.stdout, result.stderr[-2000:])


def test_child_of_unused_runtime_may_use_npu(python_runner):
    result = python_runner(
        r"""
import os, torch, npusim
pid = os.fork()
if pid == 0:
    os._exit(0 if torch.ones(2, device="npu").sum().item() == 2 else 1)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
""",
        timeout=60,
    )
    assert "child 0" in result.stdout, (result.stdout, result.stderr[-2000:])


def test_fork_stress_while_threads_run_npu_operators(python_runner):
    # 4 threads allocate, compute and free on npu while the main thread forks 60 children; each
    # child frees its copies of the parent's tensors, takes the runtime's locks through the
    # status and memory queries, and exits. Before the fork handlers, about 1 child in 30 hung.
    result = python_runner(
        r"""
import os, threading, time, torch, npusim
stop = False
def work():
    while not stop:
        a = torch.randn(64, 64, device="npu")
        b = (a @ a).relu_()
        del a, b
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
hung = 0
bad = 0
for i in range(60):
    pid = os.fork()
    if pid == 0:
        import gc
        gc.collect()
        try:
            torch.npu.memory_allocated()
        except RuntimeError:
            pass
        os._exit(0)
    deadline = time.monotonic() + 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            bad += os.waitstatus_to_exitcode(status) != 0
            break
        if time.monotonic() > deadline:
            hung += 1
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            break
        time.sleep(0.005)
stop = True
for t in threads: t.join()
print("hung", hung, "bad", bad)
""",
        timeout=120,
    )
    assert "hung 0 bad 0" in result.stdout, (result.stdout, result.stderr[-2000:])
