"""``torch_npu.contrib`` as served by npusim. Import ``transfer_to_npu`` from here to migrate a
CUDA program at run time."""
