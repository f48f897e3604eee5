"""behaviour.core stays pure: it imports without Django, and the simulator's clicks teach
PBM the order raw CTR gets wrong (a small seeded case; bench/click_models.py is the large
one)."""

import subprocess
import sys
from pathlib import Path

import numpy as np

from behaviour.core.click_models import ClickCounts, pbm_fit, raw_ctr
from behaviour.core.simulate import document_position_counts, simulate_query
from metrics_engine.agreement import kendall_tau

REPO = Path(__file__).resolve().parents[2]


def test_the_core_imports_without_django():
    code = ("import sys, behaviour.core.click_models, behaviour.core.online, "
            "behaviour.core.simulate, behaviour.core.learned, behaviour.core.predictive\n"
            "loaded = sorted(name for name in sys.modules if name.split('.')[0] == 'django')\n"
            "assert not loaded, loaded\n")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               cwd=REPO, env={"PATH": "/usr/bin:/bin"}, timeout=60,
                               check=False)
    assert completed.returncode == 0, completed.stderr


def test_pbm_orders_simulated_documents_better_than_raw_ctr():
    # 20 queries of 6 documents, 3,000 sessions each, seed 11: a fixed draw, so the means
    # below are the same on every run (not a statistical claim).
    rng = np.random.default_rng(11)
    shown, clicked, truth = [], [], []
    for _ in range(20):
        relevance = rng.uniform(0.05, 0.95, 6)
        impressions, clicks = document_position_counts(
            simulate_query(rng, relevance, sessions=3000, ranker_noise=0.3), 6)
        shown.append(impressions)
        clicked.append(clicks)
        truth.append(relevance)
    counts = ClickCounts.from_matrices(np.vstack(shown), np.vstack(clicked))

    def mean_tau(scores):
        return np.mean([kendall_tau(scores[q * 6:(q + 1) * 6], truth[q]) for q in range(20)])

    pbm, ctr = mean_tau(pbm_fit(counts).attractiveness), mean_tau(raw_ctr(counts))
    assert pbm >= 0.8
    assert pbm > ctr
