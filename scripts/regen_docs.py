#!/usr/bin/python3
"""Rewrites (or, with --check, verifies) the command outputs shown in README.md and docs/*.md.

A fenced block preceded by

    <!-- regen: COMMAND -->
    <!-- mask: REGEX -->            (optional, any number)
    <!-- tolerance: PCT% -->        (optional: numbers may differ by PCT percent)
    <!-- slow: WHY -->              (optional: only with --slow)
    <!-- requires: CONDITION -->    (optional: a shell test; when it fails here, the block is
                                     skipped, neither rewritten nor checked, and said so)

holds what `bash -c COMMAND` prints (stdout and stderr) in the scratch directory that
scripts/regen_docs.sh prepares (build/, jobs/, calibration/, tests/ of this tree, `clusterdse`
on PATH, results/quickstart.h5 swept there). COMMAND `pysession` runs the block's own `>>>`
lines in a Python console and shows the transcript. With --check, a block that differs from a
fresh run fails; text matched by a mask (timings, dates: numbers no reader would check) is
compared as a placeholder. With a tolerance, every number of the block is compared with the
fresh run's number at the same place, within PCT percent (for measured speeds, whose noise is
real; the block's text says so); the rest of the text must match exactly. A block marked slow
(its command takes minutes: a large sweep, a benchmark) is run only with --slow, and --slow runs
only those (tests/sh/docs_current.sh runs the others, tests/sh/docs_slow.sh these). A block
that needs what not every machine has (root for the Slurm cluster of the tests) says so with
`requires`; the run lists the blocks it skipped. A fence without a language tag shows output:
it needs a regen marker, or `<!-- example: WHY -->` saying why it is not regenerated (a run on other hardware, a
measurement); --check lists the ones that have neither.

A markdown table (or any paragraph: the lines up to the next blank line) preceded by

    <!-- table: COMMAND -->

is what COMMAND prints, rewritten and checked as a block is (no fence, so that it renders: e.g.
docs/eval.md's hardware columns from `clusterdse eval --help-hardware`).

Numbers in prose: a paragraph (the lines up to the next blank line) preceded by

    <!-- figures: COMMAND -->
    <!-- slow: WHY -->, <!-- requires: CONDITION -->   (optional, as for blocks)

states what COMMAND prints: COMMAND prints the paragraph's figures as the build gives them, one
text a line (e.g. "1.59x longer", "0.75 at 16K GPUs"), and each must occur in the paragraph
(line breaks and runs of spaces count as one space). Prose is written by hand, so this is never
rewritten: both a run and --check fail naming the texts the paragraph lacks, and the author
rewrites the sentence. COMMAND runs in document order with the blocks (it may read a store a
block above swept).

    regen_docs.py [--check] [--slow] SCRATCH FILE...
"""
import difflib
import re
import subprocess
import sys

MARK = re.compile(
    r"^\s*<!-- (regen|mask|example|tolerance|slow|requires|figures|table): (.*) -->\s*$")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def blocks(lines):
    """Yields (markers, open_line, close_line) for every fenced block, and for every paragraph
    marked <!-- figures: ... --> (open_line: its first line, close_line: the blank line after
    it), in document order; markers are the (kind, text) comments directly above."""
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if m and m.group(1) in ("figures", "table"):
            k = i + 1
            while k < len(lines) and MARK.match(lines[k]):
                k += 1
            if k < len(lines) and lines[k].strip() and not lines[k].lstrip().startswith("```"):
                j = k
                while j < len(lines) and lines[j].strip():
                    j += 1
                yield markers_above(lines, k), k, j
                i = j
                continue
        if lines[i].lstrip().startswith("```"):  # indented too: a block inside a list item
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            yield markers_above(lines, i), i, j
            i = j + 1
        else:
            i += 1


def markers_above(lines, i):
    """The (kind, text) marker comments on the lines directly above line i."""
    markers = []
    k = i - 1
    while k >= 0 and MARK.match(lines[k]):
        markers.insert(0, MARK.match(lines[k]).groups())
        k -= 1
    return markers


def figures(path, start, end, lines, command, scratch):
    """Problems of the paragraph lines[start:end] marked <!-- figures: COMMAND -->: the texts
    COMMAND prints that the paragraph does not contain."""
    out = subprocess.run(["bash", "-c", command], cwd=scratch, text=True, capture_output=True,
                         timeout=1800)
    wanted = [t.strip() for t in out.stdout.split("\n") if t.strip()]
    if out.returncode != 0 or not wanted:
        return [f"{path}:{start + 1}: `{command}` failed or printed nothing:\n{out.stderr}"]
    text = " ".join(" ".join(lines[start:end]).split())
    missing = [t for t in wanted if " ".join(t.split()) not in text]
    if not missing:
        return []
    return [f"{path}:{start + 1}: the paragraph does not say what `{command}` prints now: "
            + "; ".join(repr(t) for t in missing) + " (rewrite the sentence by hand)"]


def pysession(body, scratch):
    """The transcript of the block's `>>>` lines run in a fresh console, in SCRATCH."""
    statements = [line[4:] for line in body if line.startswith(">>> ")]
    program = (
        "import code\n"
        "import pandas as pd\n"
        "pd.set_option('display.width', 100)\n"
        "console = code.InteractiveConsole()\n"
        f"for line in {statements!r}:\n"
        "    print('>>> ' + line)\n"
        "    console.push(line)\n")
    out = subprocess.run(["/usr/bin/python3", "-c", program], cwd=scratch, text=True,
                         capture_output=True, timeout=600)
    return (out.stdout + out.stderr).rstrip("\n").split("\n")


def run(command, body, scratch):
    if command == "pysession":
        return pysession(body, scratch)
    out = subprocess.run(["bash", "-c", command], cwd=scratch, text=True, capture_output=True,
                         timeout=1800)
    text = out.stdout + out.stderr
    return text.rstrip("\n").split("\n")


def masked(lines, masks):
    text = "\n".join(lines)
    for m in masks:
        text = re.sub(m, "<masked>", text)
    return re.sub(r"(<masked>)+", "<masked>", text)  # a varying number of masked lines


def within(shown, fresh, percent):
    """True when SHOWN and FRESH (masked texts) are the same text around their numbers and each
    number of FRESH is within PERCENT percent of SHOWN's number at the same place."""
    if NUMBER.sub("#", shown) != NUMBER.sub("#", fresh):
        return False
    for a, b in zip(NUMBER.findall(shown), NUMBER.findall(fresh)):
        x, y = float(a), float(b)
        if abs(x - y) > percent / 100.0 * max(abs(x), abs(y)):
            return False
    return True


def process(path, scratch, check, slow, skipped):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    problems = []
    new = list(lines)
    offset = 0
    for markers, start, end in blocks(lines):
        kinds = [k for k, _ in markers]
        if "figures" in kinds:
            if ("slow" in kinds) == slow:
                command = [t for k, t in markers if k == "figures"][0]
                requires = [t for k, t in markers if k == "requires"]
                if requires and subprocess.run(["bash", "-c", requires[0]], cwd=scratch,
                                               capture_output=True).returncode != 0:
                    skipped.append(f"{path}:{start + 1}: skipped: it requires `{requires[0]}`")
                    continue
                problems += figures(path, start, end, lines, command, scratch)
                print(f"  {path}:{start + 1}: figures: {command[:60]}", file=sys.stderr)
            continue
        if "table" in kinds:
            if slow:
                continue
            command = [t for k, t in markers if k == "table"][0]
            body = lines[start:end]
            fresh = run(command, body, scratch)
            if check and body != fresh:
                diff = "\n".join(difflib.unified_diff(body, fresh, "shown", "printed now",
                                                      lineterm="", n=1))
                problems.append(f"{path}:{start + 1}: `{command}` prints otherwise:\n{diff}")
            elif not check:
                new[start + offset:end + offset] = fresh
                offset += len(fresh) - len(body)
            print(f"  {path}:{start + 1}: table: {command[:60]}", file=sys.stderr)
            continue
        indent = lines[start][:len(lines[start]) - len(lines[start].lstrip())]
        tag = lines[start].strip()[3:].strip()
        if "regen" not in kinds:
            if tag == "" and "example" not in kinds:
                problems.append(f"{path}:{start + 1}: output block without <!-- regen: CMD --> "
                                f"or <!-- example: WHY -->")
            continue
        if ("slow" in kinds) != slow:
            continue
        command = [t for k, t in markers if k == "regen"][0]
        requires = [t for k, t in markers if k == "requires"]
        if requires and subprocess.run(["bash", "-c", requires[0]], cwd=scratch,
                                       capture_output=True).returncode != 0:
            skipped.append(f"{path}:{start + 1}: skipped: it requires `{requires[0]}`")
            print(f"  {skipped[-1]}", file=sys.stderr)
            continue
        masks = [t for k, t in markers if k == "mask"]
        tolerance = [t for k, t in markers if k == "tolerance"]
        percent = float(tolerance[0].rstrip("%")) if tolerance else 0.0
        body = [line[len(indent):] if line.startswith(indent) else line
                for line in lines[start + 1:end]]
        fresh = run(command, body, scratch)
        if check:
            same = (within(masked(body, masks), masked(fresh, masks), percent) if tolerance
                    else masked(body, masks) == masked(fresh, masks))
            if not same:
                diff = "\n".join(difflib.unified_diff(body, fresh, "shown", "printed now",
                                                      lineterm="", n=1))
                problems.append(f"{path}:{start + 1}: `{command}` prints otherwise:\n{diff}")
        else:
            new[start + 1 + offset:end + offset] = [indent + line if line else line
                                                    for line in fresh]
            offset += len(fresh) - len(body)
        print(f"  {path}:{start + 1}: {command[:70]}", file=sys.stderr)
    if not check and new != lines:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(new))
    return problems


def main(argv):
    check = "--check" in argv
    slow = "--slow" in argv
    args = [a for a in argv[1:] if a not in ("--check", "--slow")]
    scratch, files = args[0], args[1:]
    problems = []
    skipped = []
    for path in files:
        problems += process(path, scratch, check, slow, skipped)
    for p in skipped + problems:
        print(p)
    if problems:
        print(f"regen_docs: {len(problems)} block(s) out of date or unmarked, or paragraph(s) "
              f"whose figures changed; run scripts/regen_docs.sh to rewrite the blocks, and "
              f"rewrite the paragraphs by hand")
        return 1
    print(f"regen_docs: {'checked' if check else 'rewrote'} {len(files)} files"
          + (f", {len(skipped)} block(s) skipped" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
