#!/usr/bin/python3
"""The classroom page in headless Chromium (Debian's chromium and
chromium-driver, driven by Debian's python3-selenium): it loads offline
from file://; each widget gives the bits `fplab round` / `fplab sum` /
`fplab generate` give for the same input; a link (the address the page
writes) reopens the same view, and an edited or damaged one restores what
it can and says which fields it reset; nothing overflows a 390 px wide
screen; the histogram's bars carry their total and count as text and are
full-height touch targets; each stored value's exact decimal expansion is
Python's Decimal(x); docs/classroom.md's lesson plan states the figures the
page shows (--update-docs writes them there). FPLAB_SCREENSHOTS=DIR saves
the page at 1400 and 390 px.

usage: test_page.py PAGE FPLAB A4_NPY [--update-docs]
"""
import json
import math
import os
import pathlib
import re
from decimal import Decimal
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def fplab_json(fplab, command, *args):
    out = subprocess.run([fplab, command, "--json", *args], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


def page_totals(driver):
    rows = driver.find_elements(By.CSS_SELECTOR, "#totals tbody tr")
    return {r.get_attribute("data-strategy"): r.find_element(By.CSS_SELECTOR, ".hex").text
            for r in rows}


def cli_totals(fplab, numbers, dtype, strategies):
    args = ["sum", "--dtype", dtype]
    for s in strategies:
        args += ["-s", s]
    j = fplab_json(fplab, *args, "--", *numbers)
    return {s["name"]: s["total"]["hex"] for s in j["strategies"]}, j["exact"]["hex"]


def set_value(driver, element_id, value, event="input"):
    driver.execute_script(
        "const e = document.getElementById(arguments[0]); e.value = arguments[1];"
        "e.dispatchEvent(new Event(arguments[2]));", element_id, value, event)


def check_bits(driver, fplab, x, label):
    """Widget 1: every format's value, error, neighbours, spacing and bits
    (the clickable digits themselves) = fplab round --json on x."""
    j = fplab_json(fplab, "round", *sum((["--format", f] for f in FORMATS), []), "--", x)
    theirs = {f["format"]: f for f in j["values"][0]["formats"]}
    shown = driver.find_elements(By.CSS_SELECTOR, "#formats .fmt")
    check(len(shown) == len(FORMATS), f"bits {label}: {len(shown)} formats shown")
    for div in shown:
        name = div.get_attribute("data-format")
        t = theirs[name]
        digits = "".join(b.text for b in div.find_elements(By.CSS_SELECTOR, ".bit"))
        ours = (div.get_attribute("data-hex"), digits, div.get_attribute("data-rounded"),
                div.get_attribute("data-error"), div.get_attribute("data-next-down"),
                div.get_attribute("data-next-up"), div.get_attribute("data-spacing"))
        cli = (t["bits"]["hex"], t["bits"]["binary"].replace(" ", ""), t["rounded"]["hex"],
               t["error"]["hex"], t["next_down"]["hex"], t["next_up"]["hex"], t["spacing"]["hex"])
        check(ours == cli, f"bits {label}, {name}: {ours[0]} {ours[2]} = fplab round's")
    return {d.get_attribute("data-format"): d for d in shown}


FORMATS = ["fp64", "fp32", "bf16", "fp16", "e4m3", "e5m2"]


def generate_text(fplab, prompt, steps, splits, batch, precision):
    args = [fplab, "generate", prompt, "-n", str(steps), "-t", "0", "--policy", "split-k",
            "--samples", str(batch), "--precision", precision]
    if splits != 0:
        args += ["--split-k", str(splits)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    lines = out.split("\n")
    return lines[1] if batch > 1 else lines[0]  # sample 0 (after its "--- seed 0")


def page_state(driver):
    ids = ["x", "every-numbers", "every-dtype", "every-mode", "every-strategy", "prompt",
           "splits", "batch", "precision", "steps", "numbers", "dtype", "k", "logit-values",
           "format"]
    values = {i: driver.find_element(By.ID, i).get_attribute("value") for i in ids}
    values["witness"] = driver.find_element(By.ID, "witness").text
    values["gen"] = driver.find_element(By.ID, "gen-text").get_attribute("data-text")
    values["flip"] = driver.find_element(By.ID, "flip").text
    values["bits"] = [d.get_attribute("data-hex")
                      for d in driver.find_elements(By.CSS_SELECTOR, "#formats .fmt")]
    return values


def check_exact_expansions(driver, label):
    """Each format's stored value, and x, as exact decimals = Python's Decimal."""
    for div in driver.find_elements(By.CSS_SELECTOR, "#formats .fmt"):
        value = float.fromhex(div.get_attribute("data-rounded"))
        ours = div.get_attribute("data-stored-exact")
        shown = div.find_element(By.CSS_SELECTOR, ".stored-exact").text
        theirs = format(Decimal(value), "f")
        check(ours == theirs and shown == theirs,
              f"exact expansion {label}, {div.get_attribute('data-format')}: {ours[:40]}... = "
              f"Python's Decimal")


def check_histogram_labels(driver, label):
    """Every bar shows its total and count on the bar (not in a tooltip),
    inside the bar, and is a touch target as tall as the plot."""
    bars = driver.find_elements(By.CSS_SELECTOR, "#hist button")
    plot = driver.find_element(By.ID, "hist").rect["height"]
    bad = []
    for b in bars:
        text = b.find_element(By.CSS_SELECTOR, ".bar-label").text
        want = f"{b.get_attribute('data-decimal')} · {int(b.get_attribute('data-count')):,}"
        inside = driver.execute_script(
            "const b = arguments[0].getBoundingClientRect(),"
            " l = arguments[0].querySelector('.bar-label').getBoundingClientRect();"
            "return l.height > 0 && l.top >= b.top - 0.5 && l.bottom <= b.bottom + 0.5"
            " && l.left >= b.left - 0.5 && l.right <= b.right + 0.5;", b)
        if text != want or not inside or b.rect["height"] < plot - 2:
            bad.append((text, want, inside, b.rect["height"]))
    widths = [b.rect["width"] for b in bars]
    check(bars and not bad, f"histogram {label}: {len(bars)} bars labelled with total and count, "
          f"{plot:.0f} px tall targets, {min(widths):.1f} to {max(widths):.1f} px wide"
          + (f": {bad[:3]}" if bad else ""))
    return min(widths)


def lesson_figures(driver):
    """Widget 2's row of the lesson plan, from the page's own bars."""
    def bars():
        return [(b.get_attribute("data-decimal"), b.get_attribute("data-hex"),
                 int(b.get_attribute("data-count")))
                for b in driver.find_elements(By.CSS_SELECTOR, "#hist button")]
    set_value(driver, "every-dtype", "float64", "change")
    set_value(driver, "every-mode", "orders", "change")
    set_value(driver, "every-strategy", "sequential", "change")
    hist = driver.find_element(By.ID, "hist")
    orders = bars()
    exact_dec, exact_hex = hist.get_attribute("data-exact-decimal"), hist.get_attribute("data-exact-hex")
    tall = max(orders, key=lambda t: t[2])
    reached = sum(c for _, h, c in orders if h == exact_hex)
    count = int(hist.get_attribute("data-count"))
    set_value(driver, "every-mode", "groupings", "change")
    trees = bars()
    tree_count = int(hist.get_attribute("data-count"))
    tree_reach = (f"{exact_dec} among them" if any(h == exact_hex for _, h, _ in trees)
                  else f"none of them {exact_dec}: the green line")
    set_value(driver, "every-dtype", "float32", "change")
    f32 = bars()
    set_value(driver, "every-dtype", "float64", "change")
    set_value(driver, "every-mode", "orders", "change")
    return (f"The default seven numbers: {count:,} orders, {len(orders)} totals from "
            f"{orders[0][0]} to {orders[-1][0]}; the tallest bar is {tall[0]} ({tall[2]:,} orders), "
            f"the exact {exact_dec} is reached by {reached:,}. Click the tallest bar, the green "
            f"bar, the outermost bars; switch to \"every grouping\" ({tree_count:,} trees, "
            f"{len(trees)} totals, {tree_reach}), then to float32 (still every grouping: "
            f"{len(f32)} totals).")


LESSON_ROW = re.compile(r"^(\| 18-26 \| 2 \| )(.*?)( \| How many different answers)", re.M)


def check_lesson_plan(driver, update):
    docs = pathlib.Path(__file__).resolve().parents[2] / "docs" / "classroom.md"
    text = docs.read_text()
    m = LESSON_ROW.search(text)
    check(m is not None, "lesson plan: docs/classroom.md has widget 2's row")
    if m is None:
        return
    figures = lesson_figures(driver)
    if update and m.group(2) != figures:
        docs.write_text(text[:m.start(2)] + figures + text[m.end(2):])
        print(f"wrote docs/classroom.md's lesson row: {figures}")
        return
    check(m.group(2) == figures, "lesson plan: widget 2's figures are the page's"
          + ("" if m.group(2) == figures else f"\n  docs: {m.group(2)}\n  page: {figures}"
             "\n  (test_page.py ... --update-docs writes them)"))


def check_damaged_link(driver, page):
    """An edited or damaged link: what fits is restored, what does not is
    reset to a value of its control and named on the page; no select is left
    blank and no widget says 'empty'."""
    link = (pathlib.Path(page).resolve().as_uri() +
            "#x=0.25&en=1e16%201%20-1e16&ed=flt&em=&k=99&ck=abc&lf=bf16&zz=1&nums=0.5%200.25")
    driver.get("about:blank")
    driver.get(link)
    wait_ready(driver)
    notice = driver.find_element(By.ID, "link-notice")
    text = notice.text
    state = {i: driver.find_element(By.ID, i).get_attribute("value")
             for i in ("x", "every-numbers", "every-dtype", "every-mode", "splits", "k", "format",
                       "numbers")}
    check(state == {"x": "0.25", "every-numbers": "1e16 1 -1e16", "every-dtype": "float64",
                    "every-mode": "orders", "splits": "16", "k": "1", "format": "bf16",
                    "numbers": "0.5 0.25"},
          f"damaged link: the fields that fit are restored, the others reset: {state}")
    for field in ("ed='flt'", "em=''", "k=99 is outside 0..16: set to 16", "ck='abc'", "'zz'"):
        check(notice.is_displayed() and field in text, f"damaged link: the notice names {field}")
    check("lf" not in text and "nums" not in text, "damaged link: the notice names only what was reset")
    body = driver.find_element(By.TAG_NAME, "body").text
    bars = len(driver.find_elements(By.CSS_SELECTOR, "#hist button"))
    errors = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".error")]
    check("empty" not in body and bars > 1 and not errors,
          f"damaged link: every widget shows a result ({bars} bars), no error: {errors}")
    driver.get(pathlib.Path(page).resolve().as_uri())
    wait_ready(driver)
    check(not driver.find_element(By.ID, "link-notice").is_displayed(),
          "an intact link shows no notice (the control)")


def screenshots(driver, where):
    if not where:
        return
    os.makedirs(where, exist_ok=True)
    for width, height in ((1400, 1800), (390, 2400)):
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1,
                                "mobile": width < 600})
        time.sleep(0.5)
        driver.execute_script("everyOrder();")
        for section in ("bits", "every"):
            driver.find_element(By.ID, section).screenshot(f"{where}/{section}-{width}.png")
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def wait_ready(driver):
    WebDriverWait(driver, 120).until(
        lambda d: d.execute_script("return document.body.dataset.ready") == "yes")


def main():
    page, fplab, a4 = sys.argv[1:4]
    update_docs = "--update-docs" in sys.argv[4:]
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"):
        options.add_argument(flag)
    profile = tempfile.TemporaryDirectory()
    options.add_argument(f"--user-data-dir={profile.name}")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(pathlib.Path(page).resolve().as_uri())
        wait_ready(driver)
        check(True, "the page loads offline and its WebAssembly module starts")

        # Widget 1: bits, for a decimal, a hex input and a flipped bit.
        check_bits(driver, fplab, "0.1", "0.1")
        check_exact_expansions(driver, "0.1")
        check("0.1000000000000000055511151231257827021181583404541015625" in
              driver.find_element(By.ID, "x-exact").text, "0.1: the double's exact value is shown")
        check_histogram_labels(driver, "1400 px")
        check_lesson_plan(driver, update_docs)
        set_value(driver, "x", "-0x1.8p-3")
        shown = check_bits(driver, fplab, "-0x1.8p-3", "-0x1.8p-3 (hex)")
        bf16 = shown["bf16"]
        before = int(bf16.get_attribute("data-hex"), 16)
        bf16.find_element(By.CSS_SELECTOR, '.bit[data-bit="7"]').click()  # the exponent's lowest
        x = driver.find_element(By.ID, "x").get_attribute("value")
        shown = check_bits(driver, fplab, x, f"after flipping bf16 bit 7 ({x})")
        check_exact_expansions(driver, x)
        after = int(shown["bf16"].get_attribute("data-hex"), 16)
        check(after == before ^ (1 << 7), f"bits: the click flipped bf16 bit 7 ({before:#06x} -> "
              f"{after:#06x})")
        set_value(driver, "x", "0.1")

        # Widget 2: every order; each bar's witness order, summed by fplab
        # sum with the same strategy, gives the bar's total.
        numbers = driver.find_element(By.ID, "every-numbers").get_attribute("value").split()
        bars = driver.find_elements(By.CSS_SELECTOR, "#hist button")
        counts = [int(b.get_attribute("data-count")) for b in bars]
        check(len(bars) > 1, f"every order: {len(bars)} distinct totals of {len(numbers)} numbers")
        check(sum(counts) == math.factorial(len(numbers)),
              f"every order: the bars count {sum(counts)} = {len(numbers)}! orders")
        _, exact = cli_totals(fplab, numbers, "float64", ["sequential"])
        check(exact in driver.find_element(By.ID, "every-summary").text,
              f"every order: the exact sum {exact} = fplab sum's")
        for bar in bars[:: max(1, len(bars) // 4)]:
            bar.click()
            w = driver.find_element(By.ID, "witness")
            order = w.get_attribute("data-order").split()
            total, _ = cli_totals(fplab, order, "float64", ["sequential"])
            check(sorted(order) == sorted(numbers) and total["sequential"] == bar.get_attribute(
                "data-hex"), f"every order: bar {bar.get_attribute('data-hex')}: fplab sum of "
                  f"{' '.join(order)} gives it")
        set_value(driver, "every-mode", "groupings", "change")
        bars = driver.find_elements(By.CSS_SELECTOR, "#hist button")
        counts = [int(b.get_attribute("data-count")) for b in bars]
        n = len(numbers)
        catalan = math.comb(2 * (n - 1), n - 1) // n
        check(sum(counts) == catalan, f"groupings: the bars count {sum(counts)} = Catalan({n - 1})")
        theirs, _ = cli_totals(fplab, numbers, "float64", ["sequential", "pairwise(1)"])
        shown = {b.get_attribute("data-hex") for b in bars}
        check(set(theirs.values()) <= shown,
              "groupings: fplab sum's sequential and pairwise(1) totals are bars")
        set_value(driver, "every-mode", "orders", "change")

        # Widget 3: the token widget's text = fplab generate's, and the slider
        # flips it (bf16), while fp32 stays (the negative control here).
        def token_view():
            driver.execute_script("tokenFlipNow();")  # no waiting for the 250 ms debounce
            return (driver.find_element(By.ID, "gen-text").get_attribute("data-text"),
                    int(driver.find_element(By.ID, "flip").get_attribute("data-first")))

        prompt = driver.find_element(By.ID, "prompt").get_attribute("value")
        for splits, batch, precision in ((3, 1, "bf16"), (1, 1, "bf16"), (0, 4, "bf16"),
                                         (8, 2, "fp32")):
            set_value(driver, "precision", precision, "change")
            set_value(driver, "batch", str(batch))
            set_value(driver, "splits", str(splits))
            text, first = token_view()
            steps = int(driver.find_element(By.ID, "steps").get_attribute("value"))
            cli = generate_text(fplab, prompt, steps, splits, batch, precision)
            check(text == cli, f"token: K={splits or 'rule'}, batch {batch}, {precision}: the "
                  f"text = fplab generate's")
        set_value(driver, "batch", "1")
        set_value(driver, "precision", "bf16", "change")
        set_value(driver, "splits", "1")
        set_value(driver, "splits", "3")
        text, first = token_view()
        a = generate_text(fplab, prompt, steps, 1, 1, "bf16")[len(prompt):]
        b = generate_text(fplab, prompt, steps, 3, 1, "bf16")[len(prompt):]
        cli_first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), -1)
        check(first >= 0 and first == cli_first,
              f"token: K 1 -> 3 in bf16 changes the text first at step {first + 1} "
              f"(fplab generate: {cli_first + 1})")
        set_value(driver, "precision", "fp32", "change")
        text, first = token_view()
        check(first == -1, "token: K 1 -> 3 in fp32 keeps the text (the control)")
        set_value(driver, "precision", "bf16", "change")
        token_view()

        # The address reopens the view: a fresh load of it shows the same.
        set_value(driver, "x", "0x1p-3")
        set_value(driver, "every-numbers", "0.1 0.2 0.3 1e16 -1e16")
        set_value(driver, "every-dtype", "float32", "change")
        driver.find_elements(By.CSS_SELECTOR, "#hist button")[-1].click()
        set_value(driver, "numbers", "1 0x1p-60 -1")
        set_value(driver, "k", "8")
        token_view()
        before = page_state(driver)
        link = driver.current_url
        driver.get("about:blank")
        driver.get(link)
        wait_ready(driver)
        token_view()
        after = page_state(driver)
        check("#" in link and after == before,
              f"a link reopens its state ({len(link)} characters)" +
              ("" if after == before else f": {before} != {after}"))

        # 390 px wide: nothing wider than the screen.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 390, "height": 844, "deviceScaleFactor": 2,
                                "mobile": True})
        time.sleep(0.5)
        overflow = driver.execute_script(
            "const w = document.documentElement.clientWidth; const out = [];"
            "for (const e of document.querySelectorAll('body *')) {"
            "  const r = e.getBoundingClientRect();"
            "  if (r.width > 0 && (r.right > w + 0.5 || r.left < -0.5)) out.push(e.id || e.tagName);"
            "}"
            "return [w, document.documentElement.scrollWidth, out.slice(0, 8)];")
        check(overflow[0] == 390 and overflow[1] <= 390 and not overflow[2],
              f"390 px: page {overflow[1]} px wide in a {overflow[0]} px screen, elements past "
              f"its edge: {overflow[2]}")
        driver.get(pathlib.Path(page).resolve().as_uri())
        wait_ready(driver)
        narrowest = check_histogram_labels(driver, "390 px")
        check(narrowest >= 14, f"390 px: the narrowest of the default 20 bars is {narrowest:.1f} px")
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        screenshots(driver, os.environ.get("FPLAB_SCREENSHOTS"))
        check_damaged_link(driver, page)

        # Widget 4: the teacher's example, then float32 numbers reordered.
        strategies = list(page_totals(driver))
        check(len(strategies) >= 6, f"widget 4 shows {len(strategies)} strategies")
        ours, exact = cli_totals(fplab, ["0.1", "1e20", "-1e20"], "float64", strategies)
        check(page_totals(driver) == ours, "widget 4: 0.1 1e20 -1e20, every total = fplab sum's")
        check(exact in driver.find_element(By.ID, "exact").text, "widget 4: exact = fplab sum's")
        numbers = ["1e8", "1", "-1e8", "0.5", "3", "-0.25", "7e-3"]
        driver.execute_script("document.getElementById('numbers').value = arguments[0];"
                              "document.getElementById('dtype').value = 'float32';",
                              " ".join(numbers))
        driver.find_element(By.ID, "reverse").click()
        ours, exact = cli_totals(fplab, list(reversed(numbers)), "float32", strategies)
        check(page_totals(driver) == ours, "widget 4: float32, reversed, every total = fplab sum's")
        distinct = len(set(ours.values()))
        check(distinct > 1, f"widget 4: the orders disagree ({distinct} distinct totals)")

        # Widget 5: the A4 data in K chunks.
        for k in (1, 4, 16):
            driver.execute_script("const s = document.getElementById('k'); s.value = arguments[0];"
                                  "s.dispatchEvent(new Event('input'));", str(k))
            shown = driver.find_element(By.ID, "chunk-total").get_attribute("data-hex")
            strategy = "numpy" if k == 1 else f"chunked({k},numpy,sequential)"
            j = fplab_json(fplab, "sum", "--file", a4, "-s", strategy)
            check(shown == j["strategies"][0]["total"]["hex"],
                  f"widget 5: K = {k}: {shown} = fplab sum -s {strategy}")
        check(driver.find_element(By.ID, "chunk-total").text.startswith("998.570678711"),
              "widget 5: K = 16 prints the claim's 998.570678711")

        # Widget 6: logits rounded to bf16; the argmax flips by a tie.
        values = driver.find_element(By.ID, "logit-values").get_attribute("value").split()
        rounded = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#rounded .hex")]
        for v, shown in zip(values, rounded):
            j = fplab_json(fplab, "round", v, "--format", "bf16")
            theirs = j["values"][0]["formats"][0]["rounded"]["hex"]
            check(shown == theirs, f"widget 6: {v} in bf16 = {shown}, fplab round says {theirs}")
        argmax = driver.find_element(By.ID, "argmax")
        check(argmax.get_attribute("data-argmax") != argmax.get_attribute("data-argmax-rounded"),
              "widget 6: the default logits flip the argmax in bf16")
        set_value(driver, "format", "fp32", "change")
        check(argmax.get_attribute("data-argmax") == argmax.get_attribute("data-argmax-rounded"),
              "widget 6: and not in fp32 (the negative control)")

        # Sorting reads hex as the CLI does (JavaScript's Number() would not).
        set_value(driver, "dtype", "float64", "change")
        set_value(driver, "numbers", "0x1p-3 -2 0x1.8p+1 0.1")
        driver.find_element(By.ID, "sort").click()
        check(driver.find_element(By.ID, "numbers").get_attribute("value") ==
              "-2 0.1 0x1p-3 0x1.8p+1", "widget 4: sort ascending reads hex")

        # Bad input is a message on the page, not a broken page.
        set_value(driver, "numbers", "0.1 abc")
        check("not a number" in driver.find_element(By.ID, "exact").text,
              "bad input: a one-line error on the page")
        set_value(driver, "x", "0x1.zp")
        check(driver.find_element(By.ID, "x-exact").get_attribute("class") == "error",
              "bad input in the bits widget: a one-line error")
    finally:
        driver.quit()
    print(f"{len(failures)} failed" if failures else "all classroom checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
