"""The size rule every file upload shares: a file over its limit is refused before it is
read, with a message that names the file, both sizes and the setting that sets the limit."""

from django.conf import settings


def size_text(size: int) -> str:
    """A byte count as people read it: megabytes from 100,000 bytes, else bytes."""
    return f"{size / 1_000_000:,.1f} MB" if size >= 100_000 else f"{size:,} bytes"


def upload_too_large(*, filename: str, size: int, setting: str, what: str,
                     hint: str = "") -> str | None:
    """Why an upload of `size` bytes is refused before it is read, or None: over the limit
    in settings.<setting>. `what` names such a file ("a run file"); `hint`, where to go
    instead."""
    limit = getattr(settings, setting)
    if size <= limit:
        return None
    return (f"{filename} is {size_text(size)}; {what} may be at most {size_text(limit)} "
            f"({setting}). Nothing was read from it{': ' + hint if hint else ''}.")
