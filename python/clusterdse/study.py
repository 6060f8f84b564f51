"""clusterdse-study: the summaries of the README's studies, as installed commands.

  clusterdse-study comet-table STORE                       COMET-style study (jobs/comet-gpt3-175b.cfg)
  clusterdse-study comet-grid GRID [PLAIN] [--png FILE]    a COMET-style design grid
  clusterdse-study goodput [CSV] [--png FILE]              time to train with failures (CSV of eval)

Also `python3 -m clusterdse.study NAME ...` (PYTHONPATH=python in the source tree). `NAME --help`
says more about each."""
import sys

from .studies import comet_grid, comet_table, goodput

STUDIES = {"comet-table": comet_table.main, "comet-grid": comet_grid.main,
           "goodput": goodput.main}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 1
    run = STUDIES.get(argv[0])
    if run is None:
        print(f"clusterdse-study: unknown study '{argv[0]}'; allowed: {', '.join(STUDIES)}",
              file=sys.stderr)
        return 1
    return run(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
