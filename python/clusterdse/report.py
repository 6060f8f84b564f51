"""clusterdse report: a self-contained HTML page of figures and tables from a store.

    /usr/bin/python3 -m clusterdse.report STORE -o DIR [--png] [--system S] [--gpus N] [-n K]

(normally run through `clusterdse report`, which finds this package). DIR/report.html embeds
every figure as PNG data (no network needed to view it); next to each figure a JSON block
(<script type="application/json" class="figure-data">) holds the points it plots, so that a
test can check them against the store, with the boxes of its labels and its legends. --png
also writes DIR/NAME.png for each figure. A sweep store's page: the Pareto fronts (time vs GPUs;
time vs cost to train per model, the designs labelled), the best time per cluster size, a tp x
pp heatmap, the time and memory breakdowns of the best configurations (adding up to the table's
totals), the failure counts and, for a design grid (hardware axes), the spread over designs,
the sensitivity per hardware axis and the time- vs cost-optimal choice. A probe store's page
draws the fit that `clusterdse fit` writes (the program is $CLUSTERDSE_BIN, which `clusterdse
report` sets, or clusterdse on PATH).

Exit codes: 0 done, 1 bad input (store missing or not a clusterdse store, bad option, output
directory not writable), 2 a damaged store or a runtime failure. The page is written into a
temporary directory and put in place once complete: a failure leaves DIR as it was (and does
not create it).
"""
import argparse
import base64
import datetime
import html
import io
import json
import os
import shutil
import signal
import stat
import sys
import tempfile

from . import figures
from . import store as store_reader
from .store import StoreDamaged, StoreError, attrs, load, tables

# Seconds one read of the store (an open and one table, read whole) may take before it counts
# as HDF5 looping on a damaged file: generous, as the command line's 10 s are for one block of
# rows, and /results is read whole here: 120 s, and 1 s more per MB of store (a healthy
# 125 MB quick-start store loads in about 15 s on the 2-core development machine).
READ_SECONDS = 120
READ_SECONDS_PER_MB = 1.0


def read_seconds(store):
    """The time one read of `store` may take (READ_SECONDS, more for a large store)."""
    try:
        size = os.path.getsize(store)
    except OSError:
        size = 0
    return READ_SECONDS + int(READ_SECONDS_PER_MB * size / 1e6)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="clusterdse report", allow_abbrev=False,
        description="Write DIR/report.html (figures embedded, no network needed) from a sweep "
        "store, a probe store or a store with /verify.")
    p.add_argument("store", metavar="STORE", help="HDF5 store written by sweep, probe or verify")
    p.add_argument("-o", "--output", metavar="DIR", required=True,
                   help="directory for report.html (created if missing)")
    p.add_argument("--png", action="store_true", help="also write each figure as DIR/NAME.png")
    p.add_argument("--system", help="system of the tp x pp heatmap (default: that of the best "
                   "configuration)")
    p.add_argument("--gpus", type=int, help="cluster size of the tp x pp heatmap (default: that "
                   "of the best configuration)")
    p.add_argument("-n", "--top", type=int, default=10, metavar="K",
                   help="configurations in the breakdown figures and table (default 10)")
    p.add_argument("--version-string", default="", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def fig_html(fig):
    """One <figure>: the PNG as a data URI, the caption, and the plotted data as JSON."""
    uri = "data:image/png;base64," + base64.b64encode(fig.png).decode()
    data = json.dumps(fig.data, sort_keys=True).replace("</", "<\\/")
    return (f'<figure id="fig-{fig.name}" class="figure">\n'
            f'<img src="{uri}" alt="{html.escape(fig.title)}">\n'
            f'<figcaption>{html.escape(fig.title)}. {html.escape(fig.caption)}</figcaption>\n'
            f'<script type="application/json" class="figure-data" data-figure="{fig.name}">'
            f'{data}</script>\n</figure>\n')


def table_html(tab):
    """A <table> whose cells carry the exact value in data-value (the text may be rounded)."""
    out = [f'<table id="tab-{tab.name}" class="data"><caption>{html.escape(tab.title)}</caption>',
           "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in tab.columns) + "</tr>"]
    for row in tab.rows:
        cells = []
        for value in row:
            text = figures.fmt(value)
            cells.append(f'<td data-value="{html.escape(str(value))}">{html.escape(text)}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>\n")
    return "\n".join(out)


STYLE = """body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#222}
figure{margin:1.5em 0;border-top:1px solid #ccc;padding-top:.5em}figure img{max-width:100%}
table.data{border-collapse:collapse;margin:1em 0;font-size:.85em;display:block;overflow-x:auto;
max-width:100%}table.data td{white-space:nowrap}
table.data td,table.data th{border:1px solid #ccc;padding:2px 6px;text-align:right}
caption{text-align:left;font-weight:bold;padding:.3em 0}dl.meta dt{font-weight:bold}"""


def page(meta, sections):
    head = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>"
                   for k, v in meta.items())
    body = "".join(sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<title>clusterdse report: {html.escape(str(meta.get("job", meta.get("probe plan"))))}'
            f"</title>"
            f"<style>{STYLE}</style></head>\n<body>\n<h1>clusterdse report</h1>\n"
            f'<dl class="meta" id="meta">{head}</dl>\n{body}</body></html>\n')


def metadata(store, root, probes, version):
    """What the page states first: the store, the job (or probe plan), the tool version of the
    run and of the report, and when each ran."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"store": os.path.abspath(store)}
    if "job_name" in root:
        meta["job"] = f'{root["job_name"]} ({root.get("job_path", "")})'
        meta["sweep ran"] = f'{root.get("created", "?")} on {root.get("ranks", "?")} ranks, ' \
                            f'host(s) {root.get("hostnames", "?")}'
        meta["tool version of the sweep"] = f'{root.get("tool_version", "?")} ' \
                                            f'(git {root.get("git_revision", "?")})'
        meta["store mode, metric"] = f'{root.get("store_mode", "?")}, {root.get("metric", "?")}'
    if probes:
        meta["probe plan"] = probes.get("plan_name", "?")
        meta["probes measured"] = f'{probes.get("date", "?")} on {probes.get("ranks", "?")} ' \
                                  f'ranks, {probes.get("nodes", "?")} node(s), host(s) ' \
                                  f'{probes.get("hostnames", "?")}'
        meta["tool of the probes"] = probes.get("tool", "?")
    meta["report written"] = now
    meta["report tool version"] = f'{version or "?"} (package {os.path.dirname(__file__)})'
    return meta


def sections_for(store, names, args, root):
    """The figures and tables the store supports, in reading order."""
    out = []
    if "counts" in names:
        out += figures.sweep_sections(store, names, args, root)
    if "probes" in names:
        out += figures.probe_sections(store, attrs(store, "probes"))
    if "verify" in names:
        out += figures.verify_sections(store)
    return out


def write_report(args, staging):
    """Writes the page (and with --png the figures) into the directory `staging`; returns the
    summary line to print once they are in place."""
    names = tables(args.store)
    root = attrs(args.store)
    if "counts" not in names and "probes" not in names and "verify" not in names:
        raise StoreError(f"{args.store}: not a clusterdse sweep or probe store (no /counts, "
                         f"/probes or /verify)")
    probes = attrs(args.store, "probes") if "probes" in names else {}
    parts = sections_for(args.store, names, args, root)
    html_parts = []
    for kind, item in parts:
        if kind == "h2":
            html_parts.append(f"<h2>{html.escape(item)}</h2>\n")
        elif kind == "p":
            html_parts.append(f"<p>{html.escape(item)}</p>\n")
        elif kind == "fig":
            html_parts.append(fig_html(item))
            if args.png:
                with open(os.path.join(staging, item.name + ".png"), "wb") as f:
                    f.write(item.png)
        else:
            html_parts.append(table_html(item))
    text = page(metadata(args.store, root, probes, args.version_string), html_parts)
    with open(os.path.join(staging, "report.html"), "w", encoding="utf-8") as f:
        f.write(text)
    n_fig = sum(1 for kind, _ in parts if kind == "fig")
    path = os.path.join(args.output, "report.html")
    return f"report: wrote {path} ({n_fig} figures, {len(text)} bytes)"


class OutputError(Exception):
    """The output directory cannot be made or written (bad input)."""


class Output:
    """Where the report goes: a temporary directory inside DIR when DIR exists, else next to it
    (with DIR's missing parents made); `commit` moves the files into DIR (or renames the
    directory to DIR), `discard` removes what this run made, so that a report that fails part
    way leaves nothing behind."""

    def __init__(self, directory):
        self.directory = directory
        self.exists = os.path.isdir(directory)
        self.made = []  # parents made by this run, outermost first
        if os.path.lexists(directory) and not self.exists:
            raise OutputError(f"output directory {directory} is a file, not a directory")
        try:
            if self.exists:
                self.staging = tempfile.mkdtemp(prefix=".report-", dir=directory)
            else:
                parent = os.path.dirname(os.path.abspath(directory))
                missing = []
                while not os.path.isdir(parent):
                    missing.append(parent)
                    parent = os.path.dirname(parent)
                for level in reversed(missing):
                    os.mkdir(level)
                    self.made.append(level)
                self.staging = tempfile.mkdtemp(
                    prefix="." + os.path.basename(os.path.normpath(directory)) + ".",
                    dir=os.path.dirname(os.path.abspath(directory)))
        except OSError as e:
            self.staging = None
            self.discard()
            what = "cannot write in" if self.exists else "cannot create"
            raise OutputError(f"{what} output directory {directory}: {e.strerror or e}") from None

    def commit(self):
        if self.exists:
            for name in sorted(os.listdir(self.staging)):
                os.replace(os.path.join(self.staging, name), os.path.join(self.directory, name))
            os.rmdir(self.staging)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(self.staging, 0o777 & ~umask)  # mkdtemp's 0700 is not what mkdir gives
            os.rename(self.staging, self.directory)
        self.staging = None

    def discard(self):
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
        for level in reversed(self.made):
            try:
                os.rmdir(level)
            except OSError:
                pass
        self.made = []


def check_store(path):
    """A message when the store is missing or not a regular file (a FIFO would block the open
    forever), else None; `clusterdse report` makes the same check first."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        return f"cannot open {path}: {e.strerror}"
    if stat.S_ISDIR(mode):
        return f"{path} is a directory; allowed: a regular file (an HDF5 file written by clusterdse)"
    if not stat.S_ISREG(mode):
        return (f"{path} is not a regular file (a FIFO, device or socket); allowed: a regular "
                f"file (an HDF5 file written by clusterdse)")
    return None


def draw(args, out):
    """Writes the report into out's staging directory and puts it in place; returns the exit
    code after printing what happened."""
    code, line = 2, None
    try:
        line = write_report(args, out.staging)
        out.commit()
        code = 0
    except StoreError as e:
        print(f"clusterdse report: {e}", file=sys.stderr)
        code = 1
    except StoreDamaged as e:
        print(f"clusterdse report: {e}; see docs/store.md (Damaged stores)", file=sys.stderr)
    except OSError as e:
        print(f"clusterdse report: writing {args.output}: {e.strerror or e}", file=sys.stderr)
    except Exception as e:  # what a store damaged past HDF5's checks makes of the figures
        print(f"clusterdse report: {args.store}: cannot draw the report ({type(e).__name__}: "
              f"{' '.join(str(e).split())}): a damaged store?; see docs/store.md (Damaged stores)",
              file=sys.stderr)
    finally:
        if code != 0:
            out.discard()
    if code == 0:
        try:
            print(line, flush=True)
        except OSError as e:
            print(f"clusterdse report: writing the output failed: {e.strerror or e}",
                  file=sys.stderr)
            code = 2
    return code


def run(args):
    """Draws the report in a child process, so that HDF5 crashing or looping on a damaged store
    (docs/store.md, Damaged stores) ends with a message and exit 2, and nothing left behind."""
    try:
        out = Output(args.output)
    except OutputError as e:
        print(f"clusterdse report: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            store_reader.read_seconds = read_seconds(args.store)
            code = draw(args, out)
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except OSError:
                    pass
            os._exit(code)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child stops on ^C, and cleans up
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    out.discard()
    sig = os.WTERMSIG(status)
    hint = "; see docs/store.md (Damaged stores)"
    if sig == signal.SIGALRM:
        what = (f"a damaged store: reading it took longer than {read_seconds(args.store)} s "
                "(HDF5 looped on it)")
    elif sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL):
        what = f"a damaged store: HDF5 crashed reading it (signal {sig})"
    else:
        what, hint = f"the report was stopped by signal {sig}", ""
    print(f"clusterdse report: {args.store}: {what}{hint}", file=sys.stderr)
    return 2


def main(argv=None):
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 1
    problem = check_store(args.store)
    if problem:
        print(f"clusterdse report: {problem}", file=sys.stderr)
        return 1
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
