#!/usr/bin/env python3
"""junit.py - CTest's JUnit report (ctest --output-junit) as result lines.

Usage: junit.py TREE REPORT.xml

One line per test, the form tests/run.sh counts:
  PASS TREE/NAME
  FAIL TREE/NAME: the first FAIL line the test printed, or its status
  SKIP TREE/NAME: the reason its SKIP line gave (exit 77, SKIP_RETURN_CODE)
then, indented, the parts skipped inside tests that passed ("SKIP ..."
lines a passing test printed), so a skip is never silent. Exit 1 when the
report holds no test at all or cannot be read.
"""
import sys
import xml.etree.ElementTree as ET


def first(lines, prefix):
    for line in lines:
        if line.startswith(prefix):
            return line
    return None


def reason(line):
    # "SKIP: why" -> "why"; "SKIP suite/case: why" -> "suite/case: why"
    return line[4:].lstrip(":").strip()


def main():
    tree, path = sys.argv[1], sys.argv[2]
    try:
        cases = ET.parse(path).getroot().iter("testcase")
    except (OSError, ET.ParseError) as e:
        print(f"FAIL {tree}/ctest: no readable JUnit report ({e})")
        return 1
    inside = []
    n = 0
    for case in cases:
        n += 1
        name = case.get("name")
        out = (case.findtext("system-out") or "").splitlines()
        skipped = case.find("skipped") is not None
        failed = case.find("failure") is not None or case.get("status") == "fail"
        if skipped:
            line = first(out, "SKIP")
            why = reason(line) if line else "no reason printed"
            print(f"SKIP {tree}/{name}: {why}")
        elif failed or case.get("status") != "run":
            line = first(out, "FAIL")
            print(f"FAIL {tree}/{name}: {line if line else 'status ' + str(case.get('status'))}")
        else:
            print(f"PASS {tree}/{name}")
            inside += [f"   skipped inside {tree}/{name}: {reason(l)}"
                       for l in out if l.startswith("SKIP")]
    for line in inside[:40]:
        print(line)
    if n == 0:
        print(f"FAIL {tree}/ctest: no tests ran")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
