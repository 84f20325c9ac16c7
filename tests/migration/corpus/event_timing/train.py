"""Times the training steps with CUDA events."""
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    images = torch.randn(3, 2, 1, 8, 8)
    times = []
    for step in range(3):
        if device == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
        loss = model(images[step].to(device)).logsumexp(dim=1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if device == "cuda":
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        print(f"LOSS {step} {loss.item()!r}")
    if times:
        assert all(t > 0 for t in times)
        print(f"mean step {sum(times) / len(times):.3f} ms on {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
