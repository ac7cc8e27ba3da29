"""``Conv1d``/``2d``/``3d``, ``ConvTranspose1d``/``2d``/``3d`` with PyTorch's parameters, shapes and default
initialization."""

from __future__ import annotations

import math

import autograd as ag
from tkernels.validation import OpValueError

from .. import functional as F
from .. import init
from .._functional_conv3d import conv_pads
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _tuple(v, n):
    return tuple(v) if isinstance(v, tuple | list) else (v,) * n


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """``padding_mode`` other than 'zeros' pads the input with ``F.pad`` (PyTorch's: 'reflect', 'replicate',
    'circular', by ``padding`` per side or by 'same''s split) and convolves it unpadded; transposed convolutions
    take only 'zeros', as PyTorch."""

    _n = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, output_padding=0):
        super().__init__()
        n = self._n
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise OpValueError(f"{type(self).__name__}: in_channels ({in_channels}) and out_channels ({out_channels}) "
                               f"must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise OpValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                               f"padding_mode={padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise OpValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.output_padding = _tuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            conv_pads(type(self).__name__, self.padding, self.kernel_size, self.stride, self.dilation)  # validates
        shape = ((in_channels, out_channels // groups) if self._transposed else
                 (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(ag.empty(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ag.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self._transposed and self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv(self, fn, input):
        """``fn`` (F.conv1d/2d/3d) on ``input``, padded first by ``padding_mode`` unless it is 'zeros'."""
        if self.padding_mode == "zeros":
            return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        pads = conv_pads(type(self).__name__, self.padding, self.kernel_size, self.stride, self.dilation)
        flat = tuple(v for pair in reversed(pads) for v in pair)  # F.pad order: last dim first
        return fn(F.pad(input, flat, mode=self.padding_mode), self.weight, self.bias, self.stride, 0,
                  self.dilation, self.groups)


class Conv1d(_ConvNd):
    _n = 1

    def forward(self, input):
        return self._conv(F.conv1d, input)


class Conv2d(_ConvNd):
    def forward(self, input):
        return self._conv(F.conv2d, input)


class ConvTranspose1d(_ConvNd):
    _n = 1
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding)

    def _output_padding(self, input, output_size):
        """The output padding that makes the output ``output_size`` (its spatial sizes, or with the batch and
        channel dimensions in front): PyTorch's rule, any size from the smallest output to stride - 1 more."""
        if output_size is None:
            return self.output_padding
        n = self._n
        lead = 2 if input.dim() == n + 2 else 1
        size = [int(v) for v in output_size]
        if len(size) == n + lead:
            size = size[lead:]
        if len(size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or {n + lead} "
                             f"elements (got {len(output_size)})")
        pad = []
        for d in range(n):
            lo = ((input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]
                  + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            hi = lo + self.stride[d] - 1
            if not lo <= size[d] <= hi:
                raise ValueError(f"requested an output size of {size}, but valid sizes range from "
                                 f"{self._sizes(input, lead, 0)} to {self._sizes(input, lead, 1)} (for an input of "
                                 f"{list(input.shape[lead:])})")
            pad.append(size[d] - lo)
        return tuple(pad)

    def _sizes(self, input, lead, largest):
        return [(input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1) + 1 + (self.stride[d] - 1) * largest
                for d in range(self._n)]

    def forward(self, input, output_size=None):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose2d(ConvTranspose1d):
    _n = 2

    def forward(self, input, output_size=None):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W); ``padding_mode`` 'zeros', 'reflect', 'replicate' or 'circular'."""

    _n = 3

    def forward(self, input):
        return self._conv(F.conv3d, input)


class ConvTranspose3d(ConvTranspose1d):
    """3-D transposed convolution over (N, C_in, D, H, W)."""

    _n = 3

    def forward(self, input, output_size=None):
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)
