# Made for kiln's tests, in KernelBench's format: layers with parameters, and
# sizes larger than kiln's import budget (scaled down).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        return torch.tanh(self.norm(self.conv(x)))


batch_size = 64
in_channels = 8
out_channels = 64
height, width = 512, 512
kernel_size = 3
num_groups = 8
input_shape = (in_channels, height, width)


def get_inputs():
    return [torch.randn(batch_size, *input_shape)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
