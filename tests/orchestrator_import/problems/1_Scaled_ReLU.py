# Made for kiln's tests, in KernelBench's format: no parameters, fits as is,
# a python float among the inputs.
import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales, then applies ReLU."""

    def __init__(self, scale):
        super(Model, self).__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, shift: float) -> torch.Tensor:
        return torch.relu(x * self.scale + shift)


batch_size = 16
dim = 4096
scale = 2


def get_inputs():
    """Docstrings and *shapes are fine: the sandbox runs this."""
    shape = (batch_size, dim)
    x = torch.randn(*shape)
    return [x, 0.5]


def get_init_inputs():
    return [scale]
