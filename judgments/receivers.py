"""Where evaluations' announcements turn into judgments work (connected in apps.ready)."""

from judgments import slots


def on_snapshots_created(sender, *, evaluation, snapshots_by_keyword, **kwargs) -> None:
    # Runs inside the fetch transaction: a snapshot never exists without its slots.
    slots.slots_create_for_keywords(evaluation=evaluation,
                                    snapshots_by_keyword=snapshots_by_keyword)
