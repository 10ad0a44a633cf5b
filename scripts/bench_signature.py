"""Benchmark kb.signature on realistic 64 KB pastes.

Why: extraction runs on every query, before retrieval; its budget is 5 ms for
a 64 KB paste.  Two pastes mix the real shapes of tests/test_signature.py
(tracebacks, multi-rank NCCL logs, pip builds, env dumps, 30% of pieces behind
`[rankN]:` prefixes) with log chatter (INFO lines, progress bars, metrics):
"log" has 25% error pieces (a typical paste), "dense" 60% (worst case).
A calibration loop is printed first so figures from different (or busy)
machines can be compared; cpu time is reported besides wall time because
it is less disturbed by other load.

Usage: python scripts/bench_signature.py [--runs 200] [--size 65536]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kb.signature import extract, mask  # noqa: E402


def _pastes() -> list[str]:
    """The real-shaped pastes of tests/test_signature.py (module-level UPPER_CASE strings)."""
    spec = importlib.util.spec_from_file_location("_sig_tests", ROOT / "tests" / "test_signature.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [v for k, v in vars(mod).items() if k.isupper() and isinstance(v, str) and "\n" in v]


def _noise(rng: random.Random) -> str:
    """Log chatter that surrounds real errors: INFO lines, bars, metrics, env dumps."""
    step = rng.randint(1, 5000)
    return "\n".join(
        [
            f"[2024-11-22 10:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d},{rng.randint(0, 999):03d}] [INFO] "
            f"[logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[1.9e-05], mom=[(0.9, 0.95)]",
            f"{{'loss': {rng.random() * 3:.4f}, 'grad_norm': {rng.random():.6f}, 'learning_rate': 1.9e-05, "
            f"'epoch': {rng.random():.2f}}}",
            f" {rng.randint(0, 99)}%|████▌     | {step}/20000 [01:{rng.randint(10, 59)}<40:29,  2.76s/it]",
            f"INFO 11-22 10:01:{rng.randint(10, 59)} metrics.py:351] Avg prompt throughput: 0.0 tokens/s, "
            f"Avg generation throughput: {rng.random() * 900:.1f} tokens/s, Running: 12 reqs, Swapped: 0 reqs",
            f"node-{rng.randint(1, 64)}:31452:31452 [{rng.randint(0, 7)}] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
            "torch                    2.1.2",
            f"  gradient_accumulation_steps={rng.randint(1, 16)},",
        ]
    )


def build_paste(size: int, error_share: float = 0.25, seed: int = 0) -> str:
    """Mix tracebacks/error logs (share `error_share` of pieces) with log chatter up to `size` bytes of UTF-8."""
    rng = random.Random(seed)
    pastes = _pastes()
    parts: list[str] = ["大家好，多机训练时报错，日志如下，求助："]
    total = len(parts[0].encode())
    while total < size:
        piece = rng.choice(pastes) if rng.random() < error_share else _noise(rng)
        if rng.random() < 0.3:
            rank = rng.randint(0, 7)
            piece = "\n".join(f"[rank{rank}]: {line}" for line in piece.splitlines())
        parts.append(piece)
        total += len(piece.encode()) + 1
    text = "\n".join(parts)
    return text.encode()[:size].decode("utf-8", "ignore")


def _stats(samples: list[float]) -> str:
    samples = sorted(samples)
    p = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]  # noqa: E731
    return f"mean {statistics.fmean(samples):.3f} ms  p50 {p(0.50):.3f} ms  p95 {p(0.95):.3f} ms  max {samples[-1]:.3f} ms"


def _calibrate(when: str) -> None:
    """The same pure-Python loop on every machine; printed before and after, since a VM's speed drifts."""
    t0 = time.process_time()
    sum(range(3_000_000))
    print(f"calibration ({when}): sum(range(3e6)) = {(time.process_time() - t0) * 1000:.1f} ms cpu")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--size", type=int, default=64 * 1024)
    args = ap.parse_args()

    _calibrate("before")
    for label, share in (("log (25% errors)", 0.25), ("dense (60% errors)", 0.6)):
        paste = build_paste(args.size, share)
        lines = paste.splitlines()
        print(f"paste {label}: {len(paste.encode())} bytes, {len(lines)} lines")
        for _ in range(5):  # warm-up
            extract(paste)
        times, cpu = [], []
        for _ in range(args.runs):
            c0, t0 = time.process_time(), time.perf_counter()
            sig = extract(paste)
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        print(f"  extract x{args.runs} wall: {_stats(times)}")
        print(f"  extract x{args.runs} cpu:  {_stats(cpu)}")
        print(f"  -> exception={sig.exception!r}, {len(sig.lines)} lines, {len(sig.components)} components")

    _calibrate("after")
    sample = [ln for ln in lines if ln.strip()]
    per_line = []
    for _ in range(max(1, args.runs // 50)):
        for ln in sample:
            t0 = time.perf_counter()
            mask(ln)
            per_line.append((time.perf_counter() - t0) * 1000)
    print(f"mask per line x{len(per_line)}: {_stats(per_line)}")


if __name__ == "__main__":
    main()
