"""Reading /metrics the way Prometheus does: parse the text and pick one sample."""

from prometheus_client.parser import text_string_to_metric_families


def sample(text: str, name: str, **labels: str) -> float:
    """The value of the sample `name` with exactly `labels`; 0 when absent (a labelled
    counter appears with its first increment)."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return found.value
    return 0.0


def names(text: str) -> set[str]:
    return {found.name for family in text_string_to_metric_families(text)
            for found in family.samples}
