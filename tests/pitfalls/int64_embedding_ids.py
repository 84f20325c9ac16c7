"""Pitfall: int64-heavy id handling around an embedding lookup. Sorting int64 ids runs on the AI
CPU (torch_npu's AI Core sort has no int64 kernel), and deduplicating them with unique is an AI CPU
operator with a host sync; the advice is int32 ids or moving the dedup off the step."""
import torch

table = torch.nn.Embedding(1000, 16).npu()
ids = torch.randint(0, 1000, (4, 64), device="npu")  # int64 by default
for step in range(2):
    ordered, _ = torch.sort(ids.flatten())  # PITFALL ai_cpu aten::sort.stable
    unique_ids = torch.unique(ordered)  # PITFALL sync torch.unique(ordered) (aten::_unique2)
    vectors = table(unique_ids)
