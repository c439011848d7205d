#!/usr/bin/env python3
"""report_check.py - a diskmon --report page as headless Chromium renders it.

Usage: report_check.py NAME PAGE.html ROWS.json DOM.html CONSOLE.log SHOT.png...

  - static: the page (and the DOM Chromium rendered from it) holds no
    script and nothing that would fetch from anywhere: no src, href,
    srcset, xlink:href, action or poster attribute, no url( or @import in
    its style, no <script>, <link>, <iframe>, <img>, <object> or <embed>;
  - console: Chromium's log (--enable-logging=stderr) has no CONSOLE line
    (a script error or console message of the page);
  - the -s counts: for each disk and request, the count and bytes that
    python sums from the -f json rows of the same input are in the row of
    table#summary in the rendered DOM;
  - each screenshot (PNG, decoded here with zlib) is not blank: at least 16
    distinct colours and 2% of its pixels not white.
One PASS/FAIL line per check; exit 0 when all pass.
"""
import json
import re
import struct
import sys
import zlib
from collections import defaultdict
from html.parser import HTMLParser

fails = 0


def result(ok, name, why=""):
    global fails
    if ok:
        print("PASS %s" % name)
    else:
        fails += 1
        print("FAIL %s: %s" % (name, why))


FETCHING_TAGS = {"script", "link", "iframe", "img", "object", "embed", "audio", "video",
                 "source", "frame", "base"}
FETCHING_ATTRS = {"src", "href", "srcset", "xlink:href", "action", "poster", "data",
                  "background", "formaction"}


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.bad = []
        self.tables = defaultdict(list)  # id -> rows of cell texts
        self.table = None
        self.row = None
        self.cell = None
        self.style = []
        self.in_style = False

    def handle_starttag(self, tag, attrs):
        if tag in FETCHING_TAGS:
            self.bad.append("<%s>" % tag)
        for k, v in attrs:
            if k in FETCHING_ATTRS or k.startswith("on"):
                self.bad.append("%s=%r on <%s>" % (k, v, tag))
            if v and re.search(r"url\s*\(|@import", v):
                self.bad.append("%s=%r on <%s>" % (k, v, tag))
        if tag == "style":
            self.in_style = True
        if tag == "table":
            self.table = dict(attrs).get("id", "")
        elif tag == "tr" and self.table is not None:
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "style":
            self.in_style = False
        elif tag in ("td", "th") and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.tables[self.table].append(self.row)
            self.row = None
        elif tag == "table":
            self.table = None

    def handle_data(self, data):
        if self.in_style:
            self.style.append(data)
        if self.cell is not None:
            self.cell += data


def parse(path):
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    style = "".join(p.style)
    if re.search(r"url\s*\(|@import", style):
        p.bad.append("url( or @import in the style")
    return p


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            if depth != 8 or colour not in (2, 6):
                raise ValueError("PNG depth %d colour type %d" % (depth, colour))
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):  # the five filters of the PNG specification, section 9
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main():
    name, page, rows_path, dom, console = sys.argv[1:6]
    shots = sys.argv[6:]
    for what, path in (("page", page), ("dom", dom)):
        p = parse(path)
        result(not p.bad, "%s/%s_fetches_nothing" % (name, what), "; ".join(p.bad[:5]))
    log = open(console, errors="replace").read()
    lines = [l for l in log.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
    result(not lines, "%s/console_quiet" % name, " | ".join(lines[:3]))
    want = defaultdict(lambda: [0, 0])
    for line in open(rows_path):
        ev = json.loads(line)
        k = (str(ev["disk"]), ev["request"])
        want[k][0] += 1
        want[k][1] += ev["bytes"]
    table = parse(dom).tables.get("summary", [])
    got = {(r[0], r[1]): r for r in table[1:] if len(r) >= 4}
    bad = []
    for k, (count, nbytes) in sorted(want.items()):
        r = got.get(k)
        if r is None or r[2] != str(count) or r[3] != str(nbytes):
            bad.append("%s %s: want %d requests %d bytes, DOM row %r" % (k + (count, nbytes, r)))
    result(bool(want) and not bad and len(got) == len(want), "%s/summary_counts_in_dom" % name,
           "; ".join(bad[:3]) or "rows %d, want %d" % (len(got), len(want)))
    for shot in shots:
        try:
            w, h, bpp, rows = png_pixels(shot)
        except (OSError, ValueError, zlib.error) as e:
            result(False, "%s/screenshot_%s" % (name, shot.rsplit("/", 1)[-1]), str(e))
            continue
        colours, inked = set(), 0
        for row in rows:
            for x in range(0, w * bpp, bpp):
                px = row[x:x + 3]
                colours.add(px)
                inked += px != b"\xff\xff\xff"
        share = inked / float(w * h)
        result(len(colours) >= 16 and share >= 0.02,
               "%s/screenshot_%s_not_blank" % (name, shot.rsplit("/", 1)[-1]),
               "%dx%d, %d colours, %.1f%% not white" % (w, h, len(colours), 100 * share))
        print("   %s: %dx%d, %d colours, %.1f%% not white" % (shot, w, h, len(colours), 100 * share))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
