"""LocalResponseNorm: F.local_response_norm over neighbouring channels; CrossMapLRN2d, torch's
legacy (Lua torch) cross-channel LRN with its own window arithmetic and hand-written backward."""
from ... import _C
from ...autograd import Function
from ...autograd.function import once_differentiable
from .. import functional as F
from .module import Module

__all__ = ["LocalResponseNorm", "CrossMapLRN2d"]


class LocalResponseNorm(Module):
    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


def _channel_sum(m, t):
    """sum_j m[c, j] * t[:, j] over the channel axis of an (N, C, H, W) tensor."""
    return _C.matmul(t.permute(0, 2, 3, 1), m.t()).permute(0, 3, 1, 2)


class _CrossMapLRN2dFn(Function):
    """torch.nn._functions.CrossMapLRN2d: the forward's running window sum (kept exactly: it
    never subtracts channel 0 once started, so channels past size // 2 + 1 include it) and the
    backward torch computes, both as channel-mixing matrices instead of channel loops."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        channels = input.size(1)
        pre_pad = int((size - 1) / 2 + 1)
        rows, row = [], [1.0 if c < min(pre_pad, channels) else 0.0 for c in range(channels)]
        rows.append(list(row))
        for c in range(1, channels):
            if c < channels - pre_pad + 1:
                row[c + pre_pad - 1] += 1.0
            if c > pre_pad:
                row[c - pre_pad] -= 1.0
            rows.append(list(row))
        window = _C.tensor(rows, dtype=input.dtype, device=input.device)
        scale = _channel_sum(window, input * input) * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.save_for_backward(input, output, scale)
        ctx.params = (size, alpha, beta)
        return output

    @staticmethod
    @once_differentiable  # torch's legacy backward has no derivative either
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        size, alpha, beta = ctx.params
        channels = input.size(1)
        inverse_pre_pad = int(size - (size - 1) / 2)
        # torch's accumulated ratio for channel c: ratio[c - inverse_pre_pad .. c + size - 1 - inverse_pre_pad]
        rows = [[1.0 if c - inverse_pre_pad <= j <= c + size - 1 - inverse_pre_pad else 0.0 for j in range(channels)]
                for c in range(channels)]
        window = _C.tensor(rows, dtype=input.dtype, device=input.device)
        accum = _channel_sum(window, grad_output * output / scale)
        grad_input = scale.pow(-beta) * grad_output - (2 * alpha * beta / size) * input * accum
        return grad_input, None, None, None, None


class CrossMapLRN2d(Module):
    """Legacy cross-channel local response normalisation of 4-D input (torch.nn.CrossMapLRN2d):
    x / (k + alpha / size * sum of x^2 over a window of channels)^beta, with torch's window
    arithmetic and gradient (which differ slightly from LocalResponseNorm's)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return _CrossMapLRN2dFn.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)
