"""The metric codes of docs/METRICS.md: each one's identity in one entry.

An entry (MetricSpec) carries the code, the short name its labels are written from
("nDCG@k" → "nDCG@10"), the scale it needs, the parameters it reads (PARAMETERS holds
their defaults and checks) and its batch function, which batch.py calls through the
registry. Adding a metric is one entry here, its kernel in kernels.py and its cases.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

import metrics_engine.kernels as kernels  # not via metrics_engine, which re-exports this module
from metrics_engine.errors import MetricInputError
from metrics_engine.scales import BINARY, DETAIL, GRADED, SCALES, Scale, is_integer

GAINS = ("linear", "exponential")
IDEALS = ("local", "pool", "max")


@dataclass(frozen=True)
class ParamSpec:
    """One metric parameter: its default and the check that cleans a given value."""

    name: str
    default: Any
    check: Callable[[Any], Any]
    """Returns the clean value or raises MetricInputError on ``params.<name>``."""


def _one_of(name: str, choices: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in choices:
            raise MetricInputError(f"params.{name}",
                                   f"{value!r} is not one of {', '.join(choices)}")
        return value

    return check


def _check_beta(beta: Any) -> float:
    if isinstance(beta, bool) or not isinstance(beta, int | float) or not math.isfinite(beta):
        raise MetricInputError("params.beta", f"{beta!r} is not a number")
    if beta <= 0:
        raise MetricInputError("params.beta", f"must be > 0, not {beta!r}")
    return float(beta)


PARAMETERS: dict[str, ParamSpec] = {
    spec.name: spec
    for spec in (
        ParamSpec("gain", "linear", _one_of("gain", GAINS)),
        ParamSpec("ideal", "local", _one_of("ideal", IDEALS)),
        ParamSpec("beta", 1.0, _check_beta),
    )
}
"""Every metric parameter (docs/METRICS.md, Parameters), in the order they are checked."""


@dataclass(frozen=True)
class Params:
    """Validated metric parameters with their defaults (docs/METRICS.md, Parameters)."""

    gain: str = PARAMETERS["gain"].default
    ideal: str = PARAMETERS["ideal"].default
    beta: float = PARAMETERS["beta"].default


class Block(Protocol):
    """What a batch function reads: one block of keywords aggregated on the metric's scale
    (batch.py's _ScaleBlock), each derived array computed once and shared by the metrics."""

    keyword_count: int

    def positions(self, derive: Callable[[np.ndarray], np.ndarray] | None,
                  m: int) -> np.ndarray: ...

    def count(self, derive: Callable[[np.ndarray], np.ndarray], m: int) -> np.ndarray: ...

    def of_relevance_pattern(self, kernel: Callable[[np.ndarray], np.ndarray],
                             m: int) -> np.ndarray: ...


@dataclass(frozen=True)
class BatchInputs:
    """Everything a metric's batch function may read for one block.

    ``m`` = min(k, positions returned); ``top_grade`` is the hi of the metric's scale;
    ``pool_values`` is given when the metric needs the pool (needs_pool), ``doc_index``
    (keywords, m) when it is zero_when_nothing_returned, ``present`` (keywords, m) when
    the caller said which positions exist.
    """

    block: Block
    m: int
    k: int
    params: Params
    top_grade: int
    pool_values: np.ndarray | None = None
    doc_index: np.ndarray | None = None
    # (keywords, m): the positions the search returned, when the caller knows them (NaN
    # in the grades is both a null v_i and no position at all).
    present: np.ndarray | None = None


BatchFunction = Callable[[BatchInputs], np.ndarray]
"""Stage 2 of one metric: per-keyword values of a block (the all-null rule is batch.py's)."""


@dataclass(frozen=True)
class MetricSpec:
    """One metric: what the application lists, labels, configures and computes."""

    code: str
    name: str
    """The short name with ``@k`` where the cutoff goes, e.g. ``"nDCG@k"``."""
    scale: str
    description: str
    batch: BatchFunction = field(compare=False, repr=False)
    params: tuple[str, ...] = ()
    """The names (keys of PARAMETERS) this metric reads; it ignores the others."""
    needs_pool: bool = False
    """Always needs the keyword's pool; ``ndcg``/``ndcg_d`` need it only with ideal=pool."""
    zero_when_nothing_returned: bool = False
    """A pool metric whose value for m = 0 is 0, not null (docs/METRICS.md, Stage 2): a
    search that returned nothing missed the documents the pool knows."""

    def label(self, k: int) -> str:
        """The name with its cutoff: ``"nDCG@k"`` at k=10 → ``"nDCG@10"``."""
        return self.name.replace("@k", f"@{k}")


# --- the batch function of every metric (stage 2 over a block; kernels.py) ---


def _precision(i: BatchInputs) -> np.ndarray:
    return kernels.precision(i.block.count(kernels.relevant, i.m),
                             i.block.count(kernels.judged, i.m))


def _average_precision(i: BatchInputs) -> np.ndarray:
    return i.block.of_relevance_pattern(kernels.average_precision, i.m)


def _reciprocal_rank(i: BatchInputs) -> np.ndarray:
    return i.block.of_relevance_pattern(kernels.reciprocal_rank, i.m)


def _cumulative_gain(i: BatchInputs) -> np.ndarray:
    return kernels.cumulative_gain(i.block.positions(kernels.nulls_as_zero, i.m))


def _dcg(i: BatchInputs) -> np.ndarray:
    return kernels.dcg(i.block.positions(kernels.gains_function(i.params.gain), i.m))


def _ndcg(i: BatchInputs) -> np.ndarray:
    gains = i.block.positions(kernels.gains_function(i.params.gain), i.m)
    if i.params.ideal == "local":
        ideal = kernels.ideal_dcg_local(gains, i.present)
    elif i.params.ideal == "pool":
        assert i.pool_values is not None
        ideal = kernels.ideal_dcg_pool(i.pool_values, i.k, i.params.gain)
    else:
        ideal = kernels.ideal_dcg_max(i.block.keyword_count, i.k, i.params.gain, i.top_grade)
    return kernels.ndcg(kernels.dcg(gains), ideal)


def _expected_reciprocal_rank(exponent: float) -> BatchFunction:
    def batch(i: BatchInputs) -> np.ndarray:
        stop = i.block.positions(kernels.stop_probabilities(i.top_grade), i.m)
        return kernels.expected_reciprocal_rank(stop, exponent)

    return batch


def _recall(i: BatchInputs) -> np.ndarray:
    assert i.pool_values is not None
    return kernels.recall(i.block.count(kernels.relevant, i.m), i.pool_values)


def _f_score(i: BatchInputs) -> np.ndarray:
    assert i.pool_values is not None
    relevant_count = i.block.count(kernels.relevant, i.m)
    return kernels.f_score(
        kernels.precision(relevant_count, i.block.count(kernels.judged, i.m)),
        kernels.recall(relevant_count, i.pool_values),
        i.params.beta,
    )


def _best(i: BatchInputs) -> np.ndarray:
    assert i.pool_values is not None and i.doc_index is not None
    return kernels.best(i.pool_values, i.doc_index)


METRICS: dict[str, MetricSpec] = {
    spec.code: spec
    for spec in (
        MetricSpec("precision", "P@k", BINARY,
                   "Share of the judged results up to k that are relevant.", _precision),
        MetricSpec("ap", "AP@k", BINARY,
                   "Average of the precision at each relevant result up to k.",
                   _average_precision),
        MetricSpec("rr", "RR@k", BINARY, "1 / rank of the first relevant result up to k.",
                   _reciprocal_rank),
        MetricSpec("cg", "CG@k", GRADED, "Sum of the grades up to k.", _cumulative_gain),
        MetricSpec("dcg", "DCG@k", GRADED,
                   "Sum of the gains up to k, discounted by log2(rank + 1).", _dcg, ("gain",)),
        MetricSpec("ndcg", "nDCG@k", GRADED,
                   "DCG@k divided by the DCG@k of the ideal ranking.", _ndcg, ("gain", "ideal")),
        MetricSpec("err", "ERR@k", GRADED,
                   "Expected reciprocal rank: chance-weighted 1/rank at which a user stops.",
                   _expected_reciprocal_rank(1.0)),
        MetricSpec("err_018", "ERR-0.18@k", GRADED,
                   "ERR with the flatter discount 1/rank^0.18.", _expected_reciprocal_rank(0.18)),
        MetricSpec("cg_d", "CG@k (detail)", DETAIL, "CG on the 1..10 detail scale.",
                   _cumulative_gain),
        MetricSpec("dcg_d", "DCG@k (detail)", DETAIL, "DCG on the 1..10 detail scale.",
                   _dcg, ("gain",)),
        MetricSpec("ndcg_d", "nDCG@k (detail)", DETAIL, "nDCG on the 1..10 detail scale.",
                   _ndcg, ("gain", "ideal")),
        MetricSpec("recall", "Recall@k", BINARY,
                   "Relevant results up to k over the relevant documents known in the pool.",
                   _recall, needs_pool=True, zero_when_nothing_returned=True),
        MetricSpec("f_score", "F-beta@k", BINARY,
                   "Weighted harmonic mean of P@k and Recall@k.", _f_score, ("beta",),
                   needs_pool=True),
        MetricSpec("best", "Best@k", GRADED,
                   "1 if a best-graded document of the pool is among the first k results.",
                   _best, needs_pool=True, zero_when_nothing_returned=True),
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
_TRAILING_K = re.compile(r"^(?P<name>[a-z](?:[a-z0-9_.]*?[a-z])?)[_.]?(?P<k>[0-9]{1,100})$")


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
        if len(cutoff.lstrip("0")) > 100:
            # int() refuses past 4,300 digits; no k anyone stores is near 100.
            raise MetricInputError(field, f"k has {len(cutoff)} digits: write code@k with a "
                                          "k of a few digits, e.g. ndcg@10")
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
    # A name of thousands of characters is quoted as far as a reader needs it.
    problem = f"unknown metric code {name if len(name) <= 40 else name[:40] + '…'!r}"
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


def config_reads_pool(code: str, params: Mapping[str, Any] | None) -> bool:
    """Whether a stored metric configuration (its code and raw params) reads the keyword's
    pool: the one rule recompute, grade reuse, pool imports, calibration and the SQL filter
    (pool_reading_codes) follow. A configuration the registry refuses (unknown code, bad
    params) reads nothing: it has no value to compute, and its run records the error."""
    try:
        return needs_pool(code, resolve_params(params))
    except MetricInputError:
        return False


def pool_reading_codes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(codes that always read the pool, codes that read it when their params say
    ``ideal=pool``): config_reads_pool's two cases, for a filter that cannot call it (the
    SQL of metrics.queries)."""
    always = tuple(code for code, spec in METRICS.items() if spec.needs_pool)
    by_ideal = tuple(code for code, spec in METRICS.items()
                     if not spec.needs_pool and "ideal" in spec.params)
    return always, by_ideal


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
    unknown = sorted(set(params) - set(PARAMETERS), key=str)
    if unknown:
        raise MetricInputError(
            f"params.{unknown[0]}", f"unknown parameter (known: {', '.join(PARAMETERS)})"
        )
    return Params(**{name: spec.check(params.get(name, spec.default))
                     for name, spec in PARAMETERS.items()})


# --- identity and labels: how pages, forms, exports and commands name a configured metric ---

MetricKey = tuple[str, int, tuple[tuple[str, Any], ...]]
"""(code, k, ((parameter, value), ...)): see metric_key."""


def metric_key(code: str, k: int, params: Mapping[str, Any] | None) -> MetricKey:
    """What makes two configured metrics the same number: code, k and the parameters the
    metric reads, with defaults filled in ({} and {"gain": "linear"} are one nDCG). A code
    or parameters the registry refuses keep their given parameters, as strings, sorted."""
    try:
        spec = metric_spec(code)
        resolved = resolve_params(params)
        read = tuple((name, getattr(resolved, name)) for name in spec.params)
    except MetricInputError:
        read = tuple(sorted((str(name), str(value)) for name, value in (params or {}).items()))
    return (code, k, read)



def metric_code_at_k(code: str, k: int) -> str:
    """``"ndcg@10"``: the code form people type and the API, forms and commands show."""
    return f"{code}@{k}"


def metric_label(code: str, k: int, params: Mapping[str, Any] | None) -> str:
    """The label of a configured metric on the pages: the registry's name at k and every
    given parameter, e.g. ``"nDCG@10 gain=exponential"``; an unknown code shows as code@k."""
    spec = METRICS.get(code)
    name = spec.label(k) if spec else metric_code_at_k(code, k)
    extras = " ".join(f"{n}={v}" for n, v in sorted((params or {}).items()))
    return f"{name} {extras}".strip()


def metric_key_label(code: str, k: int, params: Iterable[tuple[str, Any]]) -> str:
    """The label of a metric identity (code, k, resolved parameters): only the parameters
    that differ from their defaults are written, so ``{}`` and ``gain=linear`` read alike."""
    spec = METRICS.get(code)
    name = spec.label(k) if spec else metric_code_at_k(code, k)
    extras = " ".join(f"{n}={v}" for n, v in params
                      if (PARAMETERS[n].default if n in PARAMETERS else None) != v)
    return f"{name} {extras}".strip()


def metric_column(code: str, k: int, params: Mapping[str, Any] | None) -> str:
    """The CSV column of a configured metric: ``"ndcg@10[gain=exponential,ideal=pool]"``."""
    extra = ",".join(f"{name}={value}" for name, value in sorted((params or {}).items()))
    return metric_code_at_k(code, k) + (f"[{extra}]" if extra else "")


def metric_line(code: str, k: int, params: Mapping[str, Any] | None) -> str:
    """A configured metric as one line of the metrics form, ``"f_score@10 beta=2"``: what
    forms parse back (a whole float is written without ``.0``)."""
    words = " ".join(f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}"
                     for name, value in (params or {}).items())
    return f"{metric_code_at_k(code, k)} {words}".strip()
