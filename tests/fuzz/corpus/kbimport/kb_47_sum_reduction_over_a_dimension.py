# KernelBench level 1, problem 47: "47_Sum_reduction_over_a_dimension"
# (ScalingIntelligence/KernelBench, KernelBench/level1/), rewritten for kiln in
# KernelBench's format.
import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs sum reduction over a specified dimension.
    """

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 16
dim1 = 256
dim2 = 256
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
