#!/usr/bin/env python3
"""A test-file reviewer: the system under test of the `review` suite.

`review.py --files <path> [--files <path> ...]` reads each test file (paths relative to the working
directory), applies the rules in RULES line by line, writes the verdict artifact `verdict.json`
({"files", "findings", "gating"}) and exits 1 when any finding is gating, 0 otherwise. A usage
problem (no file, an unreadable file) exits 2 and writes no verdict. Standard library only.
"""

import json
import re
import sys

VERDICT = "verdict.json"


def hard_wait(lines):
    return [(number, "sleeps for a fixed time instead of waiting for a condition")
            for number, line in lines if re.search(r"\btime\.sleep\(", line)]


def no_assertion(lines):
    found, current, start, asserted = [], None, 0, False
    for number, line in lines + [(len(lines) + 1, "def end_of_file():")]:
        if re.match(r"def (test_\w+|end_of_file)\(", line):
            if current is not None and not asserted:
                found.append((start, f"{current} asserts nothing"))
            match = re.match(r"def (test_\w+)\(", line)
            current, start, asserted = (match.group(1) if match else None), number, False
        elif re.search(r"\bassert\b|pytest\.raises\(", line):
            asserted = True
    return found


def conditional_flow(lines):
    found, inside = [], False
    for number, line in lines:
        if re.match(r"def test_\w+\(", line):
            inside = True
        elif re.match(r"\S", line):
            inside = False
        elif inside and re.match(r"\s+(if|elif|for|while)\b", line):
            found.append((number, "branches inside a test, so one run checks only one path"))
    return found


def unjustified_skip(lines):
    return [(number, "skips a test without stating a reason")
            for number, line in lines if re.search(r"@pytest\.mark\.skip(\(\s*\))?\s*$", line)]


def unseeded_random(lines):
    text = "\n".join(line for _, line in lines)
    if "random.seed(" in text:
        return []
    return [(number, "draws random data without a fixed seed")
            for number, line in lines if re.search(r"\brandom\.(randint|random|choice|shuffle)\(", line)]


def live_network(lines):
    return [(number, "reaches a live network host")
            for number, line in lines
            if re.search(r"https?://(?!localhost|127\.0\.0\.1)[\w.-]+", line)]


def print_debugging(lines):
    return [(number, "leaves a debugging print in the test")
            for number, line in lines if re.match(r"\s+print\(", line)]


# rule id, detector, gating. A gating finding fails the review (exit 1); an advisory one does not.
RULES = [
    ("hard-wait", hard_wait, True),
    ("no-assertion", no_assertion, True),
    ("conditional-flow", conditional_flow, True),
    ("unjustified-skip", unjustified_skip, True),
    ("unseeded-random", unseeded_random, True),
    ("live-network", live_network, True),
    ("print-debugging", print_debugging, False),
]


def review(path):
    with open(path, encoding="utf-8") as handle:
        lines = list(enumerate(handle.read().splitlines(), start=1))
    findings = []
    for rule, detector, gating in RULES:
        for number, message in detector(lines):
            findings.append({"file": path, "line": number, "rule": rule, "gating": gating, "message": message})
    return findings


def main(argv):
    files = []
    index = 0
    while index < len(argv):
        if argv[index] != "--files" or index + 1 >= len(argv):
            sys.stderr.write(f"usage: review.py --files <path> [--files <path> ...]; got {argv[index]!r}\n")
            return 2
        files.append(argv[index + 1])
        index += 2
    if not files:
        sys.stderr.write("usage: review.py --files <path> [--files <path> ...]\n")
        return 2
    findings = []
    for path in files:
        try:
            findings.extend(review(path))
        except OSError as problem:
            sys.stderr.write(f"cannot read {path}: {problem.strerror}\n")
            return 2
    gating = any(finding["gating"] for finding in findings)
    with open(VERDICT, "w", encoding="utf-8") as handle:
        json.dump({"files": files, "findings": findings, "gating": gating}, handle, sort_keys=True, indent=1)
        handle.write("\n")
    sys.stdout.write(f"reviewed {len(files)} file(s): {len(findings)} finding(s), gating {str(gating).lower()}\n")
    return 1 if gating else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
