"""Where evaluations' announcements turn into judgments work (connected in apps.ready)."""

from judgments import services


def on_snapshots_created(sender, *, evaluation, keyword, snapshots, **kwargs) -> None:
    # Runs inside the fetch transaction: a snapshot never exists without its slots.
    services.slots_create_for_snapshots(
        evaluation=evaluation, keyword=keyword, snapshots=list(snapshots)
    )
