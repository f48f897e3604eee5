"""How long the "against behaviour" figures take (behaviour.core.predictive): Spearman and
Kendall of n keywords with their seeded bootstrap intervals, at the resamples the page
uses for n (resamples_for: 1,000, fewer past 3,162 keywords, never below 200).

    .venv/bin/python bench/behaviour_fit.py [--keywords 50 300 1000 3000 10000] [--seed 1]

Offline values uniform in [0, 1), online = offline + normal noise (sd 0.5): a middling
correlation. Pure numpy, no database: the page adds its reads of the stored values and
of the source's sums.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from behaviour.core.predictive import rank_correlation, resamples_for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keywords", type=int, nargs="+", default=[50, 300, 1000, 3000, 10000])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{'keywords':>8} {'resamples':>9} {'seconds':>8}  rho [95%]  tau-b [95%]")
    for count in args.keywords:
        offline = rng.random(count)
        online = offline + rng.normal(0, 0.5, count)
        resamples = resamples_for(count, 1000)
        started = time.perf_counter()
        found = rank_correlation(offline, online, resamples=resamples)
        seconds = time.perf_counter() - started
        rho, tau = found.spearman_interval, found.kendall_interval
        print(f"{count:>8} {resamples:>9} {seconds:>8.2f}  {found.spearman:.3f} "
              f"[{rho.low:.3f}, {rho.high:.3f}]  {found.kendall:.3f} "
              f"[{tau.low:.3f}, {tau.high:.3f}]")


if __name__ == "__main__":
    main()
