#!/usr/bin/env python3
"""Prints what an xUnit file of `swift test --parallel --xunit-output` holds: every failed
test with its message, the slowest tests, and one closing line `tests: N passed, N failed, N skipped`
(swift test --parallel prints no XCTest summary of its own). Exit status 1 when a test
failed or none ran, so a run that tested nothing never passes.

usage: scripts/xunit-summary.py FILE [FILE ...] [--slowest N]
"""
import sys
import xml.etree.ElementTree as ElementTree


def main(argv):
    slowest = 10
    files = []
    args = iter(argv)
    for arg in args:
        if arg == "--slowest":
            slowest = int(next(args))
        else:
            files.append(arg)
    if not files:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cases = []
    for path in files:
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            failure = case.find("failure")
            if failure is None:
                failure = case.find("error")
            cases.append((case.get("classname", "?"), case.get("name", "?"), float(case.get("time", "0") or 0),
                          None if failure is None else (failure.get("message") or failure.text or "failed"),
                          case.find("skipped") is not None))
    failed = [c for c in cases if c[3] is not None]
    skipped = [c for c in cases if c[3] is None and c[4]]
    for classname, name, _, message, _ in failed:
        print(f"FAILED {classname}/{name}: {message.strip()}")
    if slowest > 0 and cases:
        print(f"slowest {min(slowest, len(cases))} of {len(cases)} tests:")
        for classname, name, seconds, _, _ in sorted(cases, key=lambda c: -c[2])[:slowest]:
            print(f"  {seconds:7.1f} s  {classname}/{name}")
    for classname, name, _, _, _ in skipped:
        print(f"skipped {classname}/{name}")
    print(f"tests: {len(cases) - len(failed) - len(skipped)} passed, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
