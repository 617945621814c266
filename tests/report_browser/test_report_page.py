#!/usr/bin/python3
"""report.html in headless Chromium (Debian's chromium and chromium-driver,
driven by Debian's python3-selenium, set up as tests/classroom/test_page.py
does): at 1400 x 900 and at 390 x 844 (a phone), the page has no
horizontal overflow (document.documentElement.scrollWidth <=
window.innerWidth: wide tables scroll inside their own box) and every
figure is an <img> that decoded (naturalWidth > 0). Every in-page link
lands on an element of the page. The headline's figure (batch-answers'
lead-gap, Figure 1) is readable on the phone: every text of its SVG (title,
axis labels, tick labels, legend) is drawn at least 11 px tall, its
font-size (inherited through the SVG's groups) times the scale at which the
browser draws the <img> (img.clientWidth / the SVG's viewBox width).

Negative controls: the same checks fail on copies of the page with a wide
table outside its scroll box, with a figure whose SVG is broken, and with
the headline's SVG drawn in a 5 px font.

usage: test_report_page.py FPLAB WORKDIR
  runs `FPLAB run EXPERIMENTS --quick --out WORKDIR/run` first (a few
  experiments with the widest tables and the figures the report leads with).
"""
import base64
import pathlib
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

EXPERIMENTS = ["permutations", "chunked", "batch-variance", "batch-answers", "top2-gaps",
               "precision-flips", "flip-prediction", "nucleus"]
SCREENS = [(1400, 900, False), (390, 844, True)]
MIN_TEXT_PX = 11  # the smallest text a phone's reader is asked to read
SVG_NS = "{http://www.w3.org/2000/svg}"
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def start_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(flag)
    profile = tempfile.TemporaryDirectory()
    options.add_argument(f"--user-data-dir={profile.name}")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    return driver, profile


def load(driver, page, width, height, mobile):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1,
                            "mobile": mobile})
    driver.get(pathlib.Path(page).resolve().as_uri())
    driver.execute_script("return document.readyState")
    # Images decode asynchronously: wait for every one to settle.
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Promise.all([...document.images].map(i => i.decode().catch(() => null)))"
        ".then(() => done(true));")


def overflow(driver):
    """(scrollWidth, innerWidth) of the page."""
    return driver.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth];")


def figures(driver):
    """(figures, images, images that decoded with a width)."""
    return driver.execute_script(
        "const imgs = [...document.images];"
        "return [document.querySelectorAll('figure').length, imgs.length,"
        "        imgs.filter(i => i.complete && i.naturalWidth > 0).length];")


def dangling_links(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('a[href^=\"#\"]')]"
        "  .map(a => a.getAttribute('href').slice(1))"
        "  .filter(id => !document.getElementById(id));")


def font_size(element, inherited):
    """The element's font-size in SVG user units: its own attribute or
    style, else the inherited one."""
    style = re.search(r"font-size\s*:\s*([0-9.]+)", element.get("style", ""))
    if style:
        return float(style.group(1))
    own = element.get("font-size")
    return float(re.match(r"[0-9.]+", own).group(0)) if own else inherited


def svg_text_sizes(svg):
    """(viewBox width, [(font-size, text)] of every text drawn) of an SVG."""
    root = ET.fromstring(svg)
    view_box = root.get("viewBox")
    width = float(view_box.split()[2]) if view_box else float(re.match(r"[0-9.]+", root.get("width")).group(0))
    sizes = []

    def walk(element, inherited):
        size = font_size(element, inherited)
        if element.tag in (SVG_NS + "text", SVG_NS + "tspan") and (element.text or "").strip():
            sizes.append((size, element.text.strip()))
        for child in element:
            walk(child, size)
        # tail text belongs to the parent's font
        if element.tag == SVG_NS + "tspan" and (element.tail or "").strip():
            sizes.append((inherited, element.tail.strip()))

    walk(root, 16.0)  # a browser's default font-size
    return width, sizes


def headline_image(driver, svg):
    """(clientWidth, the SVG it shows) of the page's <img> showing `svg`, or None."""
    for src, width in driver.execute_script(
            "return [...document.images].map(i => [i.getAttribute('src'), i.clientWidth]);"):
        if src.startswith("data:image/svg+xml;base64,") and \
                base64.b64decode(src.split(",", 1)[1]).decode() == svg:
            return width, svg
    return None


def smallest_text_px(driver, svg):
    """(the smallest text of the headline's SVG in CSS px as drawn, its text),
    or None when the page does not show it."""
    found = headline_image(driver, svg)
    if found is None:
        return None
    client_width, _ = found
    view_width, sizes = svg_text_sizes(svg)
    size, text = min(sizes)
    return size * client_width / view_width, text, len(sizes)


def main():
    fplab, work = sys.argv[1:3]
    out = pathlib.Path(work) / "run"
    subprocess.run([fplab, "run", *EXPERIMENTS, "--quick", "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    page = out / "report.html"
    html = page.read_text()
    svgs = sorted((out / "figures").glob("*.svg"))
    check(len(svgs) >= 5, f"gnuplot drew {len(svgs)} figures")
    check('name="viewport"' in html, "the page has a viewport meta tag")

    # Negative controls: a wide table outside any scroll box; a broken figure.
    wide = pathlib.Path(work) / "wide.html"
    wide.write_text(html.replace(
        "<body>", "<body>\n<table><tr><td style=\"white-space:nowrap\">" + "1,2," * 2000 +
        "</td></tr></table>", 1))
    broken = pathlib.Path(work) / "broken.html"
    bad_svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg' width='10'").decode()
    broken.write_text(html.replace("<body>", "<body>\n<figure><img src=\"data:image/svg+xml;base64,"
                                   + bad_svg + "\"></figure>", 1))
    # The headline's figure as the page inlines it (from "<svg" on), and a
    # copy of the page whose headline SVG says font-size 5 everywhere.
    lead = sorted((out / "figures").glob("batch-answers*lead-gap*.svg"))
    check(len(lead) == 1, f"the headline's figure is drawn ({[p.name for p in lead]})")
    lead_svg = lead[0].read_text() if lead else ""
    lead_svg = lead_svg[lead_svg.find("<svg"):]
    tiny_svg = re.sub(r'font-size="[0-9.]+"', 'font-size="5"', lead_svg)
    tiny_svg = re.sub(r"font-size\s*:\s*[0-9.]+", "font-size:5", tiny_svg)
    encoded = base64.b64encode(lead_svg.encode()).decode()
    check(encoded in html, "the page inlines the headline's figure")
    tiny = pathlib.Path(work) / "tiny-font.html"
    tiny.write_text(html.replace(encoded, base64.b64encode(tiny_svg.encode()).decode()))

    driver, profile = start_browser()
    try:
        for width, height, mobile in SCREENS:
            load(driver, page, width, height, mobile)
            scroll, inner = overflow(driver)
            check(inner == width, f"{width}x{height}: the window is {inner} px wide")
            check(scroll <= inner,
                  f"{width}x{height}: no horizontal overflow (scrollWidth {scroll} <= {inner})")
            n_fig, n_img, decoded = figures(driver)
            check(n_img == n_fig and n_img >= len(svgs) and decoded == n_img,
                  f"{width}x{height}: {decoded} of {n_img} images decoded, {n_fig} figures, "
                  f"{len(svgs)} SVG files")
            missing = dangling_links(driver)
            check(not missing, f"{width}x{height}: every in-page link has a target {missing[:5]}")
            smallest = smallest_text_px(driver, lead_svg)
            check(smallest is not None and smallest[0] >= MIN_TEXT_PX,
                  f"{width}x{height}: the headline's figure's smallest text is at least "
                  f"{MIN_TEXT_PX} px (smallest, its text, texts: {smallest})")

            load(driver, wide, width, height, mobile)
            scroll, inner = overflow(driver)
            check(scroll > inner, f"{width}x{height}: negative control, an unwrapped wide table "
                  f"overflows (scrollWidth {scroll} > {inner})")
            load(driver, broken, width, height, mobile)
            n_fig, n_img, decoded = figures(driver)
            check(decoded < n_img, f"{width}x{height}: negative control, the broken figure is "
                  f"seen ({decoded} of {n_img} decoded)")
            load(driver, tiny, width, height, mobile)
            small = smallest_text_px(driver, tiny_svg)
            check(small is not None and small[0] < MIN_TEXT_PX,
                  f"{width}x{height}: negative control, a 5 px font in the headline's figure is "
                  f"seen (smallest text {small})")
    finally:
        driver.quit()
        profile.cleanup()
    print(f"{len(failures)} failed" if failures else "all report page checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
