"""How often `evalkit bench --batch-sizes` names a false winner, and how often its interval covers the true ratio:
whole comparisons simulated through evalkit.generation.speed.compare_batches (the code the summary, aggregate, report and Live
tab use). Usage: python scripts/batchsim.py [--sims 2000]. Seconds per call are lognormal around 1; ordinary's
true total throughput equals assisted's (false winners), or is 1.3 times it (coverage)."""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from evalkit.generation.speed import ASSISTED_WINS, ORDINARY_WINS, compare_batches  # noqa: E402


def requests(path: str, size: int, tokens: float, calls: int, strata: int, sd: float, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for c in range(calls):
        seconds = float(rng.lognormal(0, sd))
        out += [{"path": path, "batch_size": size, "call": (path, c), "stratum": c % strata, "new_tokens": tokens / size,
                 "seconds": seconds, "device": "cpu"} for _ in range(size)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sims", type=int, default=2000)
    sims = ap.parse_args().sims
    print("calls per path, strata, sd of log seconds: false 'ordinary wins', false 'assisted wins', coverage of 1.3")
    for calls, strata, sd in ((4, 2, 0.1), (6, 3, 0.1), (10, 5, 0.1), (10, 2, 0.3), (50, 5, 0.2)):
        false_o = false_a = covered = 0
        for s in range(sims):
            equal = compare_batches(requests("assisted", 1, 40, calls, strata, sd, s)
                                    + requests("ordinary", 4, 40, calls, strata, sd, 10**6 + s)).rows[-1]
            false_o += equal.winner == ORDINARY_WINS
            false_a += equal.winner == ASSISTED_WINS
            lo, hi = compare_batches(requests("assisted", 1, 40, calls, strata, sd, s)
                                     + requests("ordinary", 4, 52, calls, strata, sd, 2 * 10**6 + s)).rows[-1].vs_assisted_ci95
            covered += lo <= 1.3 <= hi
        print(f"{calls:>3} {strata:>2} {sd:.1f}: {false_o / sims:.4f} {false_a / sims:.4f} {covered / sims:.4f}")


if __name__ == "__main__":
    main()
