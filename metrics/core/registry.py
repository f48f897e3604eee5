"""The metric codes of docs/METRICS.md with the scale each needs, its parameters, their checks."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from metrics.core.errors import MetricInputError
from metrics.core.scales import BINARY, DETAIL, GRADED, SCALES, Scale, is_integer

GAINS = ("linear", "exponential")
IDEALS = ("local", "pool", "max")


@dataclass(frozen=True)
class MetricSpec:
    """What the application needs to list, describe and configure one metric."""

    code: str
    name: str
    scale: str
    description: str
    params: tuple[str, ...] = ()
    needs_pool: bool = False
    """Always needs the keyword's pool; ``ndcg``/``ndcg_d`` need it only with ideal=pool."""


@dataclass(frozen=True)
class Params:
    """Validated metric parameters with their defaults (docs/METRICS.md, Parameters)."""

    gain: str = "linear"
    ideal: str = "local"
    beta: float = 1.0


METRICS: dict[str, MetricSpec] = {
    spec.code: spec
    for spec in (
        MetricSpec("precision", "P@k", BINARY,
                   "Share of the judged results up to k that are relevant."),
        MetricSpec("ap", "AP@k", BINARY,
                   "Average of the precision at each relevant result up to k."),
        MetricSpec("rr", "RR@k", BINARY, "1 / rank of the first relevant result up to k."),
        MetricSpec("cg", "CG@k", GRADED, "Sum of the grades up to k."),
        MetricSpec("dcg", "DCG@k", GRADED,
                   "Sum of the gains up to k, discounted by log2(rank + 1).", ("gain",)),
        MetricSpec("ndcg", "nDCG@k", GRADED,
                   "DCG@k divided by the DCG@k of the ideal ranking.", ("gain", "ideal")),
        MetricSpec("err", "ERR@k", GRADED,
                   "Expected reciprocal rank: chance-weighted 1/rank at which a user stops."),
        MetricSpec("err_018", "ERR-0.18@k", GRADED,
                   "ERR with the flatter discount 1/rank^0.18."),
        MetricSpec("cg_d", "CG@k (detail)", DETAIL, "CG on the 1..10 detail scale."),
        MetricSpec("dcg_d", "DCG@k (detail)", DETAIL, "DCG on the 1..10 detail scale.",
                   ("gain",)),
        MetricSpec("ndcg_d", "nDCG@k (detail)", DETAIL, "nDCG on the 1..10 detail scale.",
                   ("gain", "ideal")),
        MetricSpec("recall", "Recall@k", BINARY,
                   "Relevant results up to k over the relevant documents known in the pool.",
                   needs_pool=True),
        MetricSpec("f_score", "F-beta@k", BINARY,
                   "Weighted harmonic mean of P@k and Recall@k.", ("beta",), needs_pool=True),
        MetricSpec("best", "Best@k", GRADED,
                   "1 if a best-graded document of the pool is among the first k results.",
                   needs_pool=True),
    )
}


ALIASES: dict[str, str] = {
    alias: code
    for code, aliases in {
        # MP@k, MAP@k and MRR@k are the means over keywords of P@k, AP@k and RR@k, which
        # is what an evaluation's value of precision, ap and rr is.
        "precision": ("p", "mp", "prec"),
        "ap": ("map", "map_cut", "avg_precision", "average_precision"),
        "rr": ("mrr", "recip_rank", "reciprocal_rank", "mrr_cut"),
        "cg": ("cumulative_gain",),
        "dcg": ("dcg_cut",),
        "ndcg": ("ndcg_cut", "n_dcg"),
        "err": ("expected_reciprocal_rank",),
        "err_018": ("err0.18", "err_0.18", "err_18", "err018"),
        "recall": ("r", "rec", "recall_cut"),
        "f_score": ("f", "f1", "fscore", "f_beta", "fbeta", "f_measure"),
        "best": ("best_at_k",),
    }.items()
    for alias in aliases
}
"""Names people type for a metric (trec_eval's ``P``, ``map``, ``ndcg_cut``, the means'
``MAP``/``MRR``/``MP``...), lower case, ``-`` read as ``_``. Only for people's input in
forms, the API and commands; the engine and ``metrics.conformance`` take the codes alone
(docs/METRICS.md: an unknown metric code is an error)."""

# "ndcg_cut_10", "P_10", "ndcg10", "map_cut.10": a trailing cutoff after the name.
_TRAILING_K = re.compile(r"^(?P<name>[a-z](?:[a-z0-9_.]*?[a-z])?)[_.]?(?P<k>[0-9]+)$")


def resolve_metric_name(text: Any, field: str = "code") -> tuple[str, int | None]:
    """The metric code and cutoff a person meant by ``text``, e.g. ``"P@10"`` →
    ``("precision", 10)``, ``"ndcg_cut_10"`` → ``("ndcg", 10)``, ``"map"`` → ``("ap", None)``.

    Case does not matter; a cutoff may follow ``@`` or close the name (trec_eval style).
    An unknown name raises MetricInputError on ``field``, suggesting the nearest code.
    """
    if not isinstance(text, str) or not text.strip():
        raise MetricInputError(field, "name a metric code, e.g. ndcg or ndcg@10")
    name = text.strip().lower().replace("-", "_")
    k: int | None = None
    if "@" in name:
        name, _, cutoff = name.partition("@")
        if not (cutoff.isascii() and cutoff.isdigit()):
            raise MetricInputError(field, f"write code@k with a whole k, e.g. ndcg@10, not "
                                          f"{text.strip()!r}")
        k = int(cutoff)
    name = name.strip()
    code = _known_code(name)
    if code is None and k is None and (match := _TRAILING_K.match(name)):
        code = _known_code(match["name"])
        if code is None:
            name = match["name"]  # the suggestion is for the name, not the cutoff
        else:
            k = int(match["k"])
    if code is None:
        raise MetricInputError(field, _unknown_code_problem(name or text.strip()))
    return code, k


def _known_code(name: str) -> str | None:
    return name if name in METRICS else ALIASES.get(name)


def _unknown_code_problem(name: str) -> str:
    problem = f"unknown metric code {name!r}"
    nearest = difflib.get_close_matches(name, [*METRICS, *ALIASES], n=1, cutoff=0.6)
    if not nearest:
        return f"{problem} (known: {', '.join(METRICS)})"
    if nearest[0] in METRICS:
        return f"{problem}; did you mean {nearest[0]!r}?"
    return f"{problem}; did you mean {ALIASES[nearest[0]]!r} ({nearest[0]!r})?"


def metric_spec(code: Any) -> MetricSpec:
    """The spec of a metric code; MetricInputError on ``metric`` for an unknown one."""
    if not isinstance(code, str) or code not in METRICS:
        raise MetricInputError("metric", f"unknown metric code {code!r}")
    return METRICS[code]


def metric_scale(spec: MetricSpec, evaluation_scale: Scale) -> Scale:
    """The scale stage 2 runs on: graded metrics use an admin-defined scale directly."""
    if spec.scale == GRADED and not evaluation_scale.is_builtin:
        return evaluation_scale
    return SCALES[spec.scale]


def needs_pool(code: str, params: Params) -> bool:
    """Whether the metric reads the keyword's pool with these parameters."""
    spec = metric_spec(code)
    return spec.needs_pool or ("ideal" in spec.params and params.ideal == "pool")


def validate_k(k: Any) -> int:
    """k must be an integer >= 1 (no upper bound in the core)."""
    if not is_integer(k) or k < 1:
        raise MetricInputError("k", f"must be an integer >= 1, not {k!r}")
    return int(k)


def resolve_params(params: Mapping[str, Any] | None) -> Params:
    """Validate ``params`` and fill in the defaults.

    Every known parameter is checked whichever metric it comes with (a metric ignores the
    ones it does not use, so one parameter set can serve several metrics); an unknown name
    is an error, so a misspelt parameter never silently falls back to its default.
    """
    if params is None:
        return Params()
    if not isinstance(params, Mapping):
        raise MetricInputError("params", "must be an object")
    unknown = sorted(set(params) - {"gain", "ideal", "beta"}, key=str)
    if unknown:
        raise MetricInputError(
            f"params.{unknown[0]}", "unknown parameter (known: gain, ideal, beta)"
        )
    gain = params.get("gain", "linear")
    if gain not in GAINS:
        raise MetricInputError("params.gain", f"{gain!r} is not one of {', '.join(GAINS)}")
    ideal = params.get("ideal", "local")
    if ideal not in IDEALS:
        raise MetricInputError("params.ideal", f"{ideal!r} is not one of {', '.join(IDEALS)}")
    beta = params.get("beta", 1.0)
    if isinstance(beta, bool) or not isinstance(beta, int | float) or not math.isfinite(beta):
        raise MetricInputError("params.beta", f"{beta!r} is not a number")
    if beta <= 0:
        raise MetricInputError("params.beta", f"must be > 0, not {beta!r}")
    return Params(gain=gain, ideal=ideal, beta=float(beta))
