"""The pictures in docs/ui.md, taken as a person sees them: a real Airflow 3 and a real browser.

    .venv/bin/python dev/screenshots.py          # writes docs/images/*.png (about 2 minutes)

It serves example_dags/ as ``make demo`` does (the example estate, Airflow 3's asset constructs,
the freshness producers, the export DAGs: 33 DAGs), exports it through a file sink the UI page
reads, and loads the page in headless Chromium (``tests/support/browser.py``): inside the Airflow
UI, then the lineage picture of the whole estate, then one DAG's neighbourhood. Each picture is
a part of the window, so that the PNG files stay small (under 200 kB each).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the harness: tests/support/

from support.airflow_server import AirflowApiServer
from support.browser import Browser, find_chromium

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "docs" / "images"
FRAME = 'document.querySelector("iframe").contentDocument'


def save(browser: Browser, path: Path, clip: dict[str, float] | None = None) -> None:
    params: dict[str, object] = {"format": "png"}
    if clip:
        params.update(clip={**clip, "scale": 1}, captureBeyondViewport=True)
    path.write_bytes(base64.b64decode(browser.command("Page.captureScreenshot", params, timeout=60)["data"]))
    print(f"  {path.relative_to(REPO)}: {path.stat().st_size:,} bytes", flush=True)


def save_part(browser: Browser, path: Path, selector: str, pad: int = 8) -> None:
    """A PNG of the part of the page where ``selector`` is, in the page's coordinates."""
    x, y, width, height = browser.evaluate(
        f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
        " return [r.x + window.scrollX, r.y + window.scrollY, r.width, r.height]; })()"
    )
    save(browser, path, {"x": max(x - pad, 0), "y": max(y - pad, 0), "width": width + 2 * pad,
                         "height": height + 2 * pad})  # fmt: skip


def main() -> int:
    chromium = find_chromium()
    if chromium is None:
        print("no Chromium: apt-get install chromium", file=sys.stderr)
        return 2
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="coremodels-shots-") as tmp:
        out = Path(tmp) / "coremodels"
        with AirflowApiServer(
            REPO / "example_dags",
            extra_env={"AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR": str(out)},
            run_dags=("exports_producer", "orders_loader"),
            failing_dags=("broken_feed",),
            scheduler_pass=True,
        ) as server:
            export = subprocess.run(
                [sys.executable, "-m", "airflow_provider_coremodels", "export", "--base-url", server.base_url,
                 "--username", server.username, "--password-env", "SHOTS_PASSWORD", "--sink", str(out)],
                env={**server.env, "SHOTS_PASSWORD": server.password}, capture_output=True, text=True,
            )  # fmt: skip
            if export.returncode != 0:
                print(export.stderr, file=sys.stderr)
                return 1
            token = server.token()
            with Browser(chromium, width=1280, height=900) as browser:
                browser.set_cookie("_token", token, url=server.base_url)
                browser.navigate(f"{server.base_url}/plugin/coremodels")
                browser.wait_for(
                    f"(() => {{ const d = {FRAME}; return d && d.readyState === 'complete'"
                    " && !!d.querySelector('svg.coremodels-lineage'); })()"
                )
                save(browser, IMAGES / "ui-page.png")
                for name, query in (
                    ("ui-lineage.png", ""),
                    ("ui-neighbourhood.png", "?around=daily_revenue&depth=4"),
                ):
                    browser.navigate(f"{server.base_url}/coremodels/{query}")
                    browser.wait_for('!!document.querySelector(".picture svg[viewBox]")')
                    save_part(browser, IMAGES / name, "#lineage")
    return 0


if __name__ == "__main__":
    sys.exit(main())
