"""A CPU program full of CUDA look-alikes that must not be migrated: comments that mention cuda,
identifiers named cuda_*, words such as "barracuda", and a dictionary key "nccl_timeout" that is
not a backend name."""
import torch

# On a cuda machine this would be faster, but the program stays on the CPU on purpose.
cuda_enabled = False
settings = {"fish": "barracuda", "nccl_timeout": 30, "label": "cuda-free"}


def cuda_free_step(model, optimizer, x):
    loss = model(x).sin().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    x = torch.linspace(0, 1, 6).reshape(2, 3)
    for step in range(3):
        print(f"LOSS {step} {cuda_free_step(model, optimizer, x).item()!r}")
    # (A literal "cuda" alone would be rewritten: the strict rule of msFmkTransplt does not look at its use.)
    assert not cuda_enabled and settings["fish"].endswith("racuda")


if __name__ == "__main__":
    main()
