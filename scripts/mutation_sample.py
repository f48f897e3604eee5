"""A mutation sample: proof that the test suite still catches bugs in the guard lines that
matter most (who sees whose grades, the outbound deny list, the judge trust gate, the
schedules' due-time claim, bounds, verdicts, exact sums, the import preview token).

Each entry of scripts/mutation_sample.json is a one-line, realistic bug in one guard (a
flipped comparison, a dropped condition, an off-by-one constant, a swapped argument) with
the tests that should catch it. This script puts each bug into the working tree in turn,
runs `python -m pytest -q -x -p no:randomly <its tests>`, puts the file back byte for byte
(also on Ctrl+C), and says per mutation:

    caught   the tests failed
    MISSED   the tests passed: the suite no longer guards that line
    error    the tests could not run (a collection error, no test collected, ...); counted
             as caught only when pytest's exit code is 1

Run it before and after a change to the tests (a speed-up, a refactor): the same sample
caught both times means the suite did not lose those guards. It exits 1 when any mutation
was not caught, 2 when it refuses to run (a bad entry, a dirty file).

    nice -n 19 python scripts/mutation_sample.py [--only ID ...] [--python PATH]
        [--baseline] [-- extra pytest args]

It refuses a file with uncommitted changes (the restore would be ambiguous) and an entry
whose `old` text is missing from its file or appears there more than once. A mutant's
file carries a time of its own, so no cached bytecode of another version is taken for it.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().with_suffix(".json")
FIELDS = ("id", "area", "file", "old", "new", "why", "tests")
EXPECTED_COUNT = 22


class Refused(Exception):
    """The sample cannot run as asked; the message says why."""


class Stopped(Exception):
    """SIGTERM or SIGHUP arrived: restore the file, then stop."""


@dataclass(frozen=True)
class Mutation:
    id: str
    area: str
    file: str
    old: str
    new: str
    why: str
    tests: list[str]

    @property
    def path(self) -> Path:
        return REPO / self.file


@dataclass(frozen=True)
class Outcome:
    label: str  # "caught", "MISSED" or "error"
    caught: bool
    seconds: float
    tail: list[str]


def load(data: Path) -> list[Mutation]:
    """The entries of the data file, each checked for its fields and types."""
    try:
        entries = json.loads(data.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise Refused(f"cannot read {data}: {error}") from None
    if not isinstance(entries, list):
        raise Refused(f"{data}: expected a JSON list of mutations")
    mutations, seen = [], set()
    for number, entry in enumerate(entries, start=1):
        name = entry.get("id", f"entry {number}") if isinstance(entry, dict) else f"entry {number}"
        if not isinstance(entry, dict) or set(entry) != set(FIELDS):
            raise Refused(f"{name}: an entry has exactly the fields {', '.join(FIELDS)}")
        if not all(isinstance(entry[key], str) and entry[key] for key in FIELDS[:-1]):
            raise Refused(f"{name}: {', '.join(FIELDS[:-1])} are non-empty strings")
        tests = entry["tests"]
        if not isinstance(tests, list) or not tests or not all(
                isinstance(test, str) and test for test in tests):
            raise Refused(f"{name}: `tests` is a non-empty list of pytest node ids or files")
        if name in seen:
            raise Refused(f"{name}: the id appears twice")
        seen.add(name)
        mutations.append(Mutation(**entry))
    return mutations


def changed_line(mutation: Mutation) -> tuple[int, str, str]:
    """(index in `old`, old line, new line) of the one line the mutation changes."""
    old_lines, new_lines = mutation.old.split("\n"), mutation.new.split("\n")
    if len(old_lines) != len(new_lines):
        raise Refused(f"{mutation.id}: `old` and `new` have different line counts")
    differing = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    if len(differing) != 1:
        raise Refused(f"{mutation.id}: a mutation changes exactly one line, this one changes "
                      f"{len(differing)}")
    index = differing[0]
    return index, old_lines[index], new_lines[index]


def check(mutation: Mutation) -> int:
    """The 1-based line of the file the mutation changes; Refused when its `old` text is
    missing or not unique in the file, or a test file it names does not exist."""
    changed_line(mutation)
    if not mutation.path.is_file():
        raise Refused(f"{mutation.id}: no file {mutation.file}")
    text = mutation.path.read_text(encoding="utf-8")
    found = text.count(mutation.old)
    if found != 1:
        where = "is missing from" if found == 0 else f"appears {found} times in"
        raise Refused(f"{mutation.id}: its `old` text {where} {mutation.file}")
    for test in mutation.tests:
        if not (REPO / test.split("::")[0]).is_file():
            raise Refused(f"{mutation.id}: no test file {test.split('::')[0]}")
    return text[:text.index(mutation.old)].count("\n") + changed_line(mutation)[0] + 1


def dirty(files: list[str]) -> list[str]:
    """Those of `files` that differ from HEAD (staged or not)."""
    listed = subprocess.run(["git", "diff", "--name-only", "HEAD", "--", *files], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    quiet = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *files], cwd=REPO)
    if quiet.returncode not in (0, 1):
        raise Refused("git diff failed: is this a git work tree?")
    return listed if quiet.returncode == 1 else []


def pytest_command(python: str, tests: list[str], extra: list[str]) -> list[str]:
    return [python, "-m", "pytest", "-q", "-x", "-p", "no:randomly", *tests, *extra]


def run_tests(python: str, tests: list[str], extra: list[str]) -> tuple[int, str, float]:
    """pytest's exit code, its output and the seconds it took."""
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.monotonic()
    done = subprocess.run(pytest_command(python, tests, extra), cwd=REPO, env=environment,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return done.returncode, done.stdout, time.monotonic() - started


def classify(code: int, output: str, seconds: float) -> Outcome:
    tail = [line for line in output.strip().splitlines() if line.strip()][-6:]
    if code == 0:
        return Outcome("MISSED", False, seconds, tail)
    # The summary line names failed tests; exit 1 with errors alone means the tests could
    # not run (an import or fixture error), which still counts as caught.
    failed = code == 1 and re.search(r"\b\d+ failed\b", output) is not None
    return Outcome("caught" if failed else "error", code == 1, seconds, tail)


def mutate_and_test(mutation: Mutation, python: str, extra: list[str]) -> Outcome:
    """Apply the mutation, run its tests, and restore the file byte for byte (and its
    times, so the bytecode cached for the original stays valid) whatever happens."""
    path = mutation.path
    original = path.read_bytes()
    times = path.stat()
    mutated = original.replace(mutation.old.encode("utf-8"), mutation.new.encode("utf-8"), 1)
    try:
        path.write_bytes(mutated)
        # A time no cached bytecode of the original or of another mutant carries (a .pyc
        # keeps whole seconds and the size; the test run may write bytecode whatever
        # PYTHONDONTWRITEBYTECODE says, tests/startup.py): Python never takes another
        # version's .pyc for this mutant, even when both have the same size.
        offset_seconds = 2 + zlib.crc32(mutated) % 100_000
        os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns + offset_seconds * 10**9))
        code, output, seconds = run_tests(python, mutation.tests, extra)
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    if path.read_bytes() != original:
        raise RuntimeError(f"{mutation.file} was not restored")
    return classify(code, output, seconds)


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The options, and the pytest arguments given after `--`."""
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", metavar="ID", help="run these mutations only")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python that runs pytest (default: this one)")
    parser.add_argument("--data", type=Path, default=DATA, help=f"default: {DATA.name}")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the entries and list them; run no test")
    parser.add_argument("--baseline", action="store_true",
                        help="first run every selected mutation's tests on the unmutated "
                             "tree; they must pass, or a 'caught' would prove nothing")
    return parser.parse_args(argv), extra


def main(argv: list[str]) -> int:
    options, extra = parse(argv)
    try:
        mutations = load(options.data)
        if options.data == DATA and len(mutations) != EXPECTED_COUNT:
            raise Refused(f"{DATA.name} lists {len(mutations)} mutations, not {EXPECTED_COUNT}")
        if options.only:
            unknown = sorted(set(options.only) - {m.id for m in mutations})
            if unknown:
                raise Refused(f"no mutation {', '.join(unknown)}")
            mutations = [m for m in mutations if m.id in options.only]
        lines = {m.id: check(m) for m in mutations}
        files = sorted({m.file for m in mutations})
        unclean = dirty(files)
        if unclean:
            raise Refused("uncommitted changes in " + ", ".join(unclean)
                          + ": commit or stash them first (the sample restores files to HEAD's "
                            "bytes only when they start there)")
    except Refused as error:
        print(f"mutation_sample: refused: {error}", file=sys.stderr)
        return 2

    width = max(len(m.id) for m in mutations)
    if options.dry_run:
        for mutation in mutations:
            _, before, after = changed_line(mutation)
            print(f"{mutation.id:<{width}} {mutation.file}:{lines[mutation.id]}  "
                  f"{before.strip()}  ->  {after.strip()}\n{'':<{width}} tests: "
                  + " ".join(mutation.tests))
        return 0
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    started = time.monotonic()
    if options.baseline:
        tests = list(dict.fromkeys(test for m in mutations for test in m.tests))
        code, output, seconds = run_tests(options.python, tests, extra)
        print(f"{'baseline':<8} {'passed' if code == 0 else 'FAILED':<7} {seconds:7.1f}s  "
              f"{len(tests)} test ids on the unmutated tree", flush=True)
        if code != 0:
            print("\n".join("    " + line for line in output.strip().splitlines()[-15:]))
            return 2
    caught = 0
    try:
        for mutation in mutations:
            outcome = mutate_and_test(mutation, options.python, extra)
            caught += outcome.caught
            _, before, after = changed_line(mutation)
            print(f"{mutation.id:<{width}} {outcome.label:<7} {outcome.seconds:7.1f}s  "
                  f"{mutation.file}:{lines[mutation.id]}  {before.strip()}  ->  "
                  f"{after.strip()}", flush=True)
            if outcome.label != "caught":
                print("\n".join("    " + line for line in outcome.tail), flush=True)
    except (KeyboardInterrupt, Stopped) as stop:
        print(f"\nmutation_sample: stopped ({stop.__class__.__name__}); the file in work was "
              "restored", file=sys.stderr)
        return 130
    missed = len(mutations) - caught
    print(f"total {time.monotonic() - started:.0f}s")
    print(f"{caught} caught, {missed} missed of {len(mutations)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
