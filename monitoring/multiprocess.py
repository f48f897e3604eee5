"""Summing the processes' counter and histogram files for /metrics, faster than
prometheus-client's MultiProcessCollector.

The library re-reads every file from its start on each scrape, decodes each entry's JSON
key, builds a Sample per entry per file and formats each line anew: with four gunicorn
workers that each served some 250 views, about 13,000 entries and 180 ms a scrape
(bench/RESULTS.md). Here what does not change between scrapes is kept:

- A file only grows (a process appends an entry the first time it counts a new series, and
  never moves one), so its entries' positions are read once; a scrape re-reads only the
  values at those positions, plus any entries appended since.
- Each series' line prefix (`name{labels} `) is formatted once.

The output is the library's text format with the same samples and values (a test parses
both and compares). Gauge files (which merge per process mode: min, max, live...) are left
to the library; the app defines none today.
"""

import json
import os
import struct
from dataclasses import dataclass, field

from prometheus_client.exposition import generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

_INTEGER = struct.Struct("i")
# What sums across processes: a counter's and a summary's samples, a histogram's buckets,
# _sum and _count. A gauge file's name starts with "gauge_".
_SUMMED = ("counter", "histogram", "summary")


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _labels_text(labels: tuple[tuple[str, str], ...]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{name}="{_escape(value)}"' for name, value in labels) + "}"


@dataclass
class _Series:
    """One series of one metric, summed over files: its line's prefix, or for a histogram
    bucket, the bucket's bound (cumulated at output)."""
    metric: str
    sample: str
    labels: tuple[tuple[str, str], ...]  # without "le"
    bound: float | None  # a histogram bucket's upper bound
    prefix: str


@dataclass
class _File:
    inode: int
    used: int = 8  # bytes of entries read so far (the header is 8)
    slots: list[int] = field(default_factory=list)  # value index (position / 8) per entry
    series: list[int] = field(default_factory=list)  # series index per entry


class FileSummer:
    """Sums the counter, histogram and summary files of one multiprocess directory.

    Keeps, between scrapes, each file's entry positions and each series' formatted prefix;
    one instance per process (module-level `summer`), used by one scrape at a time (a sync
    worker serves one request at a time; `exposition` takes no lock)."""

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        self._series: list[_Series] = []
        self._series_index: dict[tuple, int] = {}
        self._metrics: dict[str, tuple[str, str]] = {}  # name -> (type, help)
        self._layout: list = []
        self._layout_shape: tuple = ()

    def _series_for(self, kind: str, key: str) -> int:
        metric, sample, labels, help_text = json.loads(key)
        self._metrics.setdefault(metric, (kind, help_text))
        bound = None
        if kind == "histogram" and "le" in labels:
            bound = float(labels.pop("le"))
        ordered = tuple(sorted(labels.items()))
        identity = (metric, sample, ordered, bound)
        index = self._series_index.get(identity)
        if index is None:
            index = len(self._series)
            self._series_index[identity] = index
            shown = ordered if bound is None else (*ordered, ("le", floatToGoString(bound)))
            self._series.append(_Series(metric, sample, ordered, bound,
                                        sample + _labels_text(shown) + " "))
        return index

    def _read(self, path: str, kind: str, totals: dict[int, float]) -> None:
        try:
            with open(path, "rb") as handle:
                inode = os.fstat(handle.fileno()).st_ino
                data = handle.read()
        except FileNotFoundError:
            return  # removed since the directory was listed: its process is gone
        if len(data) < 8:
            return
        used = _INTEGER.unpack_from(data, 0)[0]
        known = self._files.get(path)
        if known is None or known.inode != inode or known.used > used:
            known = self._files[path] = _File(inode=inode)
        position = known.used
        while position < used:
            length = _INTEGER.unpack_from(data, position)[0]
            key_at = position + 4
            position = key_at + length + (8 - (length + 4) % 8)
            known.slots.append(position >> 3)
            known.series.append(self._series_for(kind, data[key_at:key_at + length].decode()))
            position += 16
        known.used = used
        values = memoryview(data)[:used - used % 8].cast("d")
        for slot, series in zip(known.slots, known.series, strict=True):
            totals[series] = totals.get(series, 0.0) + values[slot]

    def text(self, directory: str) -> bytes:
        """The summed samples of every counter, histogram and summary file in `directory`,
        in Prometheus's text format; gauge files through prometheus-client's collector."""
        totals: dict[int, float] = {}
        gauges = []
        shape = []
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".db"):
                continue
            kind = name.split("_", 1)[0]
            path = os.path.join(directory, name)
            if kind in _SUMMED:
                self._read(path, kind, totals)
                shape.append((path, len(self._files[path].series) if path in self._files else 0))
            else:
                gauges.append(path)
        for gone in self._files.keys() - {path for path, _ in shape}:
            del self._files[gone]  # its process's files were removed
        if tuple(shape) != self._layout_shape:
            self._layout = self._layout_for(totals)
            self._layout_shape = tuple(shape)
        output = self._format(totals)
        if gauges:
            registry = CollectorRegistry()
            registry.register(_GaugeFiles(gauges))
            output += generate_latest(registry).decode()
        return output.encode()

    def _layout_for(self, totals: dict[int, float]) -> list:
        """What a scrape writes, in order, for the series in `totals`: header strings,
        (prefix, series) for a plain sample, and for each histogram's label set a list
        of (prefix, series) by bound with the _count line's prefix last."""
        by_metric: dict[str, list[int]] = {}
        for index in totals:
            by_metric.setdefault(self._series[index].metric, []).append(index)
        layout: list = []
        for metric in sorted(by_metric):
            kind, help_text = self._metrics[metric]
            shown = f"{metric}_total" if kind == "counter" else metric
            help_escaped = help_text.replace("\\", r"\\").replace("\n", r"\n")
            layout.append(f"# HELP {shown} {help_escaped}\n# TYPE {shown} {kind}\n")
            buckets: dict[tuple, list[tuple[float, int]]] = {}
            for index in sorted(by_metric[metric]):
                series = self._series[index]
                if series.bound is None:
                    layout.append((series.prefix, index))
                else:
                    buckets.setdefault(series.labels, []).append((series.bound, index))
            for labels, bounds in buckets.items():
                layout.append(([(self._series[index].prefix, index) for _, index in sorted(bounds)],
                               f"{metric}_count{_labels_text(labels)} "))
        return layout

    def _format(self, totals: dict[int, float]) -> str:
        lines = []
        for item in self._layout:
            if isinstance(item, str):
                lines.append(item)
            elif isinstance(item[0], str):
                lines.append(f"{item[0]}{floatToGoString(totals.get(item[1], 0.0))}\n")
            else:
                # The files hold each bucket's own count; the format wants them cumulated,
                # and _count is the last (+Inf) bucket's cumulated count.
                cumulated = 0.0
                for prefix, index in item[0]:
                    cumulated += totals.get(index, 0.0)
                    lines.append(f"{prefix}{floatToGoString(cumulated)}\n")
                lines.append(f"{item[1]}{floatToGoString(cumulated)}\n")
        return "".join(lines)


class _GaugeFiles:
    def __init__(self, paths: list[str]) -> None:
        self._paths = paths

    def collect(self):
        return MultiProcessCollector.merge(self._paths, accumulate=True)


summer = FileSummer()
