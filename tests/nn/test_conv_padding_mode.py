"""``padding_mode`` of Conv1d/2d/3d ('zeros', 'reflect', 'replicate', 'circular'): the module equals the unpadded
convolution of the input padded by NumPy's ``np.pad`` (reflect, edge, wrap), on cpu and interpreted cuda, with
'same' padding, unbatched input, gradcheck, and against torch 2.13; transposed convolutions refuse the other modes
with PyTorch's error."""

import numpy as np
import pytest

import autograd as ag
import nn
import nn.functional as F  # noqa: N812 - PyTorch's spelling

RNG = np.random.default_rng(2)
NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}
CASES = [  # (module, functional, in, out, kernel, padding, stride, dilation, input shape)
    (nn.Conv1d, F.conv1d, 2, 3, 3, 2, 1, 1, (2, 2, 7)),
    (nn.Conv1d, F.conv1d, 2, 1, 4, "same", 1, 1, (2, 5)),  # unbatched; 'same' with an even kernel splits 1 + 2
    (nn.Conv2d, F.conv2d, 3, 2, (3, 2), (1, 2), (2, 1), 1, (1, 3, 5, 6)),
    (nn.Conv2d, F.conv2d, 2, 2, 3, "same", 1, (2, 1), (1, 2, 7, 5)),
    (nn.Conv3d, F.conv3d, 1, 2, 2, (1, 0, 1), 1, 1, (1, 1, 3, 4, 3)),
]


def _pads(padding, kernel, dilation, n):
    k = (kernel,) * n if isinstance(kernel, int) else kernel
    d = (dilation,) * n if isinstance(dilation, int) else dilation
    if padding == "same":
        return [(t // 2, t - t // 2) for t in (di * (ki - 1) for ki, di in zip(k, d))]
    p = (padding,) * n if isinstance(padding, int) else padding
    return [(v, v) for v in p]


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_padding_modes_equal_np_pad_then_convolve(dev, case):
    mod, fn, cin, cout, k, p, s, d, shape = CASES[case]
    x = RNG.normal(size=shape)
    n = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3}[mod]
    pads = _pads(p, k, d, n)
    modes = ("zeros", "reflect", "replicate", "circular") if dev == "cpu" or case == 2 else ("reflect",)
    for mode in modes:
        m = mod(cin, cout, k, padding=p, stride=s, dilation=d, padding_mode=mode, device=dev, dtype=ag.float64)
        got = m(ag.tensor(x, device=dev)).detach().cpu().numpy()
        lead = [(0, 0)] * (len(shape) - n)
        xp = np.pad(x, lead + pads, mode="constant" if mode == "zeros" else NP_MODE[mode])
        ref = fn(ag.tensor(xp, device=dev), m.weight, m.bias, s, 0, d).detach().cpu().numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12, err_msg=mode)
        assert (f"padding_mode={mode}" in repr(m)) == (mode != "zeros")


def test_gradcheck_and_errors():
    m = nn.Conv2d(2, 2, 3, padding=(2, 1), padding_mode="circular", dtype=ag.float64)
    x = ag.tensor(RNG.normal(size=(1, 2, 3, 4)), requires_grad=True)
    assert ag.gradcheck(lambda a, w, b: F.conv2d(F.pad(a, (1, 1, 2, 2), mode="circular"), w, b),
                        (x, m.weight, m.bias))
    assert ag.gradcheck(lambda a: m(a), (x,))
    r = nn.Conv1d(1, 1, 3, padding=1, padding_mode="reflect", dtype=ag.float64)
    assert ag.gradgradcheck(lambda a: r(a), (ag.tensor(RNG.normal(size=(1, 1, 4)), requires_grad=True),))
    for cls in (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d):
        with pytest.raises(ValueError, match=f'Only "zeros" padding mode is supported for {cls.__name__}'):
            cls(1, 1, 2, padding_mode="circular")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv1d(1, 1, 2, padding_mode="wrap")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(1, 1, 3, padding="same", stride=2, padding_mode="reflect")
    big = nn.Conv2d(1, 1, 3, padding=3, padding_mode="reflect")
    with pytest.raises((RuntimeError, ValueError), match="reflect"):
        big(ag.ones(1, 1, 3, 3))


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    for mode in ("reflect", "replicate", "circular"):
        for mod, _fn, cin, cout, k, p, s, d, shape in CASES:
            x = RNG.normal(size=shape)
            tm = getattr(torch.nn, mod.__name__)(cin, cout, k, padding=p, stride=s, dilation=d, padding_mode=mode,
                                                 dtype=torch.float64)
            om = mod(cin, cout, k, padding=p, stride=s, dilation=d, padding_mode=mode, dtype=ag.float64)
            om.load_state_dict({kk: ag.tensor(v.detach().numpy()) for kk, v in tm.state_dict().items()})
            np.testing.assert_allclose(om(ag.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                                       rtol=1e-10, atol=1e-12, err_msg=f"{mod.__name__} {mode}")
