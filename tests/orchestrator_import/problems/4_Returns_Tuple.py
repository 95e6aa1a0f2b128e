# Made for kiln's tests, in KernelBench's format: refused (two outputs).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return x + 1, x - 1


n = 1024


def get_inputs():
    return [torch.randn(n, n)]


def get_init_inputs():
    return []
