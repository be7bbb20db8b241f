"""README's wall-time table of the paper reproductions, read from the result folders themselves: for each make target,
the newest folder (``LATEST``) of its figure and the ``wall_seconds``, ``machine`` and commit its ``provenance.json``
records (:meth:`sgmcmc.paper.PaperFolder.finish`). A folder written before wall times were recorded says so: its time
is nowhere but in prose, so it is not shown.

    python scripts/wall_times.py            # print the table
    python scripts/wall_times.py --readme   # write it into README.md between its markers
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
README_START, README_END = "<!-- wall times -->", "<!-- end wall times -->"
# make target -> (results folder of its figure, the settings that must hold in its provenance to count)
TARGETS = {
    "recipe-fig2": ("results/paper/recipe-fig2", {}),
    "sghmc-slides": ("results/paper/sghmc-slides", {}),
    "lecture-toys": ("results/paper/lecture-toys", {}),
    "ccadl-table1": ("results/paper/ccadl-table1", {}),
    "reference-logistic": ("results/reference/logistic_mnist79-proj0", {}),
    "ccadl-fig2": ("results/paper/ccadl-fig2", {}),
    "ccadl-fig2-posterior": ("results/paper/ccadl-fig2-posterior", {}),
    "ccadl-fig3": ("results/paper/ccadl-fig3", {}),
    "recipe-fig3": ("results/paper/recipe-fig3", {}),
    "recipe-fig3-friction": ("results/paper/recipe-fig3-friction", {}),
    "sghmc-bnn": ("results/paper/sghmc-bnn", {}),
    "sghmc-bpmf-synthetic": ("results/paper/sghmc-bpmf", {"ratings": "synthetic"}),
    "csgmcmc-mixture": ("results/paper/csgmcmc-mixture", {}),
    "sgld-cv-scaling": ("results/paper/sgld-cv-scaling", {}),
}


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def row(target: str, figure_root: Path, required: dict) -> dict:
    """One make target's newest folder and what its provenance records of its wall time."""
    latest = figure_root / "LATEST"
    if not latest.is_file():
        return {"command": f"`make {target}`", "folder": "none committed", "wall time": "", "machine": "", "commit": ""}
    folder = figure_root / latest.read_text().strip()
    record = json.loads((folder / "provenance.json").read_text())
    settings = record.get("settings", {})
    link = f"[{folder.name}]({folder.relative_to(ROOT).as_posix()}/)"
    out = {"command": f"`make {target}`", "folder": link, "wall time": "not recorded (written before wall times were)",
           "machine": "", "commit": (record.get("git_commit") or "")[:7] + (" (dirty)" if record.get("git_dirty") else "")}
    if any(settings.get(key) != value for key, value in required.items()):
        out["wall time"] = f"not recorded (the newest folder has {dict((k, settings.get(k)) for k in required)})"
    elif "wall_seconds" in record or "wall_time_s" in settings:  # the latter: two experiments' own clock, no machine
        seconds = record.get("wall_seconds", settings.get("wall_time_s"))
        machine = record.get("machine") or {}
        load = machine.get("load_average")
        notes = [note for key, note in (("smoke", "smoke settings"), ("summarised_only", "summary rebuilt only"),
                                        ("added_into", "runs added to an existing folder")) if settings.get(key)]
        out["wall time"] = minutes(seconds) + (f" ({', '.join(notes)})" if notes else "")
        out["machine"] = (f"{machine.get('cores')} cores, {machine.get('cpu')}"
                          + (f", load {load[1]:.1f} over the last 5 min at the end" if load else "")
                          if machine else "not recorded")
    return out


def table() -> str:
    frame = pd.DataFrame([row(target, ROOT / path, required) for target, (path, required) in TARGETS.items()])
    return frame.to_markdown(index=False)


def write_readme(text: str) -> None:
    readme = ROOT / "README.md"
    content = readme.read_text()
    start, end = content.index(README_START) + len(README_START), content.index(README_END)
    readme.write_text(content[:start] + "\n" + text + "\n" + content[end:])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", action="store_true", help="write the table into README.md between its markers")
    args = parser.parse_args(argv)
    text = table()
    if args.readme:
        write_readme(text)
    print(text)


if __name__ == "__main__":
    main()
