# Made for kiln's tests, in KernelBench's format: a parameter of the model's
# own, two inputs, a derived constant, an int64 output.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, N):
        super(Model, self).__init__()
        self.bias = nn.Parameter(torch.randn(N))

    def forward(self, A, B):
        return torch.argmax(torch.matmul(A, B) + self.bias, dim=1)


M = 256
K = 128
N = K * 2


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return [N]
