"""torch.fft and complex math: ember vs the PyTorch in this interpreter, same machine, same run.

Cases are the shapes FFT programs use: a batch of long real signals (rfft, irfft: spectral
losses, STFT-like), 2-D transforms of feature maps (rfft2/irfft2: Fourier neural operators,
FFT convolution), complex 2-D (fft2), prime lengths (no radix-2/3/5 factorisation), one or two
very long lines (a whole recording: the six-step path), many frames of 1000 (radix 5), a
spectral loss forward + backward, and stft / istft of eight 1 s, 16 kHz signals (n_fft 512,
hop 128, Hann window). Median of repeats, ms; ratio = ember / torch (below 1: ember faster).

    PYTHONPATH=python:build/python .venv/bin/python bench/bench_fft.py [--threads 2]
    (run it with /path/to/torch2-venv/bin/python too, for PyTorch 2.x)
"""
import argparse
import statistics
import time

import ember

try:
    import torch
except ImportError:
    torch = None


def timeit(fn, repeat=15, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def cases(T):
    g = T.manual_seed(0)
    del g
    sig = T.randn(64, 4096)
    spec = T.fft.rfft(sig)
    maps = T.randn(8, 32, 64, 64)
    maps_ft = T.fft.rfft2(maps)
    cmaps = T.randn(16, 128, 128, dtype=T.complex64)
    prime = T.randn(64, 4099)
    long_sig = T.randn(1, 1 << 20)
    long_c = T.randn(1 << 20, dtype=T.complex64)
    audio = T.randn(2, 100000, dtype=T.complex64)
    frames = T.randn(256, 1000)
    x = T.randn(32, 2048, requires_grad=True)
    target = T.randn(32, 1025).abs()
    speech = T.randn(8, 16000)
    hann = T.hann_window(512)
    spectrogram = T.stft(speech, 512, hop_length=128, window=hann, return_complex=True)

    def spectral_loss():
        loss = (T.fft.rfft(x).abs() - target).abs().mean()
        loss.backward()

    return {
        "rfft (64, 4096) f32": lambda: T.fft.rfft(sig),
        "irfft (64, 2049) c64": lambda: T.fft.irfft(spec),
        "rfft2 (8, 32, 64, 64)": lambda: T.fft.rfft2(maps),
        "irfft2 (8, 32, 64, 33)": lambda: T.fft.irfft2(maps_ft, s=(64, 64)),
        "fft2 (16, 128, 128) c64": lambda: T.fft.fft2(cmaps),
        "rfft prime (64, 4099)": lambda: T.fft.rfft(prime),
        "rfft one long line (1, 2^20)": lambda: T.fft.rfft(long_sig),
        "fft c64 one long line (2^20)": lambda: T.fft.fft(long_c),
        "fft c64 (2, 100000)": lambda: T.fft.fft(audio),
        "rfft (256, 1000)": lambda: T.fft.rfft(frames),
        "spectral loss fwd+bwd (32, 2048)": spectral_loss,
        "stft (8, 16000) 512/128 hann": lambda: T.stft(speech, 512, hop_length=128, window=hann, return_complex=True),
        "istft (8, 257, 126) 512/128 hann": lambda: T.istft(spectrogram, 512, hop_length=128, window=hann),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    ember.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    e = cases(ember)
    t = cases(torch) if torch is not None else {}
    label = f"torch {torch.__version__}" if torch is not None else "torch (absent)"
    print(f"{'case':36s} {'ember ms':>10s} {label:>18s} {'ratio':>7s}")
    ratios = []
    for name, fn in e.items():
        em = timeit(fn)
        tm = timeit(t[name]) if name in t else float("nan")
        r = em / tm if t else float("nan")
        ratios.append(r)
        print(f"{name:36s} {em:10.3f} {tm:18.3f} {r:7.2f}")
    if t:
        geo = 1.0
        for r in ratios:
            geo *= r
        print(f"geomean ratio {geo ** (1 / len(ratios)):.2f}")


if __name__ == "__main__":
    main()
