"""Screenshots of the rendered reports for the gallery: ``docs/img/<notebook>.png``.

Each ``reports/<notebook>.html`` (``make reports`` writes them) is opened by headless Chromium
(Debian's ``/usr/bin/chromium``, which ``make browser`` installs), given time to draw its
charts, and captured at a desktop width; the top of the page is kept, scaled down and reduced to
a 256-colour palette so that each PNG stays well under 300 KB.

    .venv/bin/python docs/screenshots.py              # every report
    .venv/bin/python docs/screenshots.py 06_what_if   # one

Needs Pillow (installed with the notebooks extra) and Chromium; reads nothing from the network.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

from ragnb.report.render import list_notebooks

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"
OUT = ROOT / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"
#: the notebooks in notebooks/, as `ragnb report --all` renders them
NOTEBOOKS = [p.stem for p in list_notebooks()]
#: browser window (CSS pixels) and the size of the saved picture
WINDOW = (1280, 1800)
WIDTH = 800
MAX_BYTES = 300_000


def capture(html: Path, png: Path, *, budget_ms: int = 20_000) -> None:
    """Screenshot ``html`` into ``png`` at :data:`WINDOW` with headless Chromium."""
    with tempfile.TemporaryDirectory(prefix="ragnb-shot-") as profile:
        subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--mute-audio",
                f"--user-data-dir={profile}",
                f"--window-size={WINDOW[0]},{WINDOW[1]}",
                f"--virtual-time-budget={budget_ms}",
                f"--screenshot={png}",
                html.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=180,
        )


def shrink(png: Path) -> int:
    """Scale ``png`` to :data:`WIDTH` pixels wide and save it with a 256-colour palette;
    returns its size in bytes."""
    with Image.open(png) as image:
        rgb = image.convert("RGB")
    height = round(rgb.height * WIDTH / rgb.width)
    small = rgb.resize((WIDTH, height), Image.Resampling.LANCZOS)
    small.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(png, optimize=True)
    return png.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=NOTEBOOKS, help="report names")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    status = 0
    for name in args.notebooks:
        html = REPORTS / f"{name}.html"
        if not html.exists():
            print(f"{html}: missing (run `make reports` first)", file=sys.stderr)
            status = 1
            continue
        png = OUT / f"{name}.png"
        capture(html, png)
        size = shrink(png)
        print(f"{png.relative_to(ROOT)}: {size / 1000:.0f} KB")
        if size >= MAX_BYTES:
            print(f"{png.name}: {size} bytes, over {MAX_BYTES}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
