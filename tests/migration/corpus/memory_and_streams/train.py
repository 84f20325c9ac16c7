"""A training loop that watches device memory and overlaps the host-to-device copy of the next
batch on a side stream, with pinned host memory."""
import torch
import torch.nn as nn

cuda = torch.cuda.is_available()
device = torch.device("cuda") if cuda else torch.device("cpu")


def batches(count):
    generator = torch.Generator().manual_seed(0)
    for _ in range(count):
        batch = torch.randn(16, 10, generator=generator)
        yield batch.pin_memory() if cuda else batch


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    copy_stream = torch.cuda.Stream() if cuda else None
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.empty_cache()
    for step, host_batch in enumerate(batches(4)):
        if cuda:
            with torch.cuda.stream(copy_stream):
                batch = host_batch.to(device, non_blocking=True)
            torch.cuda.current_stream().wait_stream(copy_stream)
            batch.record_stream(torch.cuda.current_stream())
        else:
            batch = host_batch
        loss = model(batch).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"LOSS {step} {loss.item()!r}")
    if cuda:
        torch.cuda.synchronize()
        allocated = torch.cuda.memory_allocated()
        peak = torch.cuda.max_memory_allocated(device)
        reserved = torch.cuda.memory_reserved(0)
        free, total = torch.cuda.mem_get_info()
        assert 0 < allocated <= peak <= reserved <= total
        print(torch.cuda.memory_summary(abbreviated=True).splitlines()[0])
        print(f"{torch.cuda.get_device_name(0)}: peak {peak} bytes")


if __name__ == "__main__":
    main()
