"""PyTorch with a CUDA device, for the GPU-only Python tests: they print
"skipped: no PyTorch with a CUDA device" and exit 77 without one."""

SKIPPED = 77


def cuda_torch():
    """The torch module, or None (after saying why) without PyTorch or a GPU."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("skipped: no PyTorch with a CUDA device")
        return None
    return torch
