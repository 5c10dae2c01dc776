"""Batch norms with `momentum=None` (a cumulative average of the batch
statistics) in a training export. PyTorch's forward divides by
`float(num_batches_tracked)`, a host read that torch.export cannot trace
(it fails on a data-dependent value); while compile_train exports, each
such module in training mode runs this forward instead, which reads the
count as a tensor: the graph updates the running statistics on the device
with the step's own factor 1 / num_batches_tracked, as PyTorch's does."""
import contextlib
import types

import torch
import torch.nn.functional as F


def cumulative_forward(self, x):
    """_BatchNorm.forward for momentum=None in training mode, with the
    factor as a tensor: running = f * batch + (1 - f) * running, f = 1 / n
    after n += 1, the variance unbiased (PyTorch's rules)."""
    self._check_input_dim(x)
    self.num_batches_tracked.add_(1)
    y = F.batch_norm(x, None, None, self.weight, self.bias, True, 0.0, self.eps)
    dims = [0, *range(2, x.dim())]
    count = x.numel() // x.shape[1]
    dtype = self.running_mean.dtype
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) * (x - mean)).mean(dims) * (count / max(count - 1, 1))
    factor = (1.0 / self.num_batches_tracked).to(dtype)
    self.running_mean.copy_(factor * mean.flatten().to(dtype) + (1 - factor) * self.running_mean)
    self.running_var.copy_(factor * var.to(dtype) + (1 - factor) * self.running_var)
    return y


def is_cumulative(module):
    """A training-mode batch norm with momentum=None and running statistics,
    whose forward is its class's (a forward the user set on the instance is
    theirs: it is left alone)."""
    return (isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and
            module.momentum is None and module.training and module.track_running_stats and
            "forward" not in vars(module))


@contextlib.contextmanager
def traceable_cumulative_batch_norms(module):
    """Within: every training-mode batch norm of `module` with momentum=None
    runs cumulative_forward (an instance attribute, removed after)."""
    patched = [m for m in module.modules() if is_cumulative(m)]
    for m in patched:
        m.forward = types.MethodType(cumulative_forward, m)
    try:
        yield
    finally:
        for m in patched:
            del m.forward
