#!/usr/bin/env bash
# Issue 9: the include graph per layer (docs/architecture.md). Follows every #include of the
# layer's sources and headers through the project's headers (transitively) and fails when
#   - the model layer (src/model, include/clusterdse/model) reaches mpi.h, hdf5.h or libconfig.h,
#     or a header of another layer;
#   - the configuration layer (src/config, include/clusterdse/config) reaches mpi.h or hdf5.h,
#     or a header of sweep or calibrate;
#   - the MPI-free calibration headers (fit.h, probe_rows.h) reach mpi.h;
#   - the model layer reaches any project header outside include/clusterdse/model (nothing above
#     it: no src/ internal header of another folder, no other layer's header);
#   - the sweep layer (src/sweep, include/clusterdse/sweep) reaches a calibrate header (sweep
#     never knows the calibration, which sits above it);
#   - the store (src/sweep/store*, include/clusterdse/sweep/store.h) includes a configuration
#     header or reaches one through any header it includes (transitively), or includes a model
#     header other than the record layout (model/fields.h, model/record.h, model/common.h), or
#     names a model enumeration, a status or a metric itself (cdse_status_*, cdse_metric_*,
#     CDSE_METRIC_*, cdse_*_enum), or the job (cdse_job, the store modes of config/job.h): it
#     reads names from the tables the record layout hands it (cdse_record_enum_tables, the
#     columns' name tables, sweep/columns.h) and what it writes of a job from the description
#     the sweep builds (cdse_store_desc, cdse_store_describe);
#   - anything in src/{model,config,sweep,calibrate} writes to stdout or stderr itself (printf,
#     puts, putchar, perror, vprintf, or the names stdout / stderr outside comments and
#     strings): below the commands, output goes to a FILE * that a command passes.
# Prints every violation with the chain of includes that leads to it.
set -euo pipefail
: "${CDSE_SRC:?}"
cmd="/usr/bin/python3 - $CDSE_SRC"
echo "+ $cmd (include graph)"
/usr/bin/python3 - "$CDSE_SRC" <<'PY'
import os, re, sys

root = sys.argv[1]
inc = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)

def strip(text):
    """Source without comments and string/char literals (kept line for line)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append('\n' * text.count('\n', i, j)); i = j
        elif text.startswith('//', i):
            j = text.find('\n', i); j = n if j < 0 else j
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c); i = j + 1
        else:
            out.append(c); i += 1
    return ''.join(out)

def resolve(src, kind, name):
    """Project file an include names, or None for a system header."""
    if kind == '"':
        for base in (os.path.dirname(src), os.path.join(root, 'include')):
            p = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(p):
                return p
    p = os.path.join(root, 'include', name)
    return p if os.path.isfile(p) else None

cache = {}
def includes(path):
    if path not in cache:
        text = open(path).read()
        cache[path] = [(k, n) for k, n in inc.findall(text)]
    return cache[path]

def reach(path):
    """Every include reachable from path: {name: chain}."""
    seen, found, todo = set(), {}, [(path, [os.path.relpath(path, root)])]
    while todo:
        cur, chain = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        for kind, name in includes(cur):
            p = resolve(cur, kind, name)
            found.setdefault(name, chain + [name])
            if p is not None:
                todo.append((p, chain + [os.path.relpath(p, root)]))
    return found

def files(*dirs):
    for d in dirs:
        full = os.path.join(root, d)
        for f in sorted(os.listdir(full)):
            if f.endswith(('.c', '.h')):
                yield os.path.join(full, f)

bad = []
def forbid(paths, names, prefixes, why):
    for path in paths:
        for name, chain in reach(path).items():
            if name in names or any(name.startswith(p) for p in prefixes):
                bad.append(f"{why}: {' -> '.join(chain)}")

upper = ('clusterdse/config/', 'clusterdse/sweep/', 'clusterdse/calibrate/')
forbid(files('src/model', 'include/clusterdse/model'), {'mpi.h', 'hdf5.h', 'libconfig.h'},
       upper, 'model layer')
forbid(files('src/config', 'include/clusterdse/config'), {'mpi.h', 'hdf5.h'},
       ('clusterdse/sweep/', 'clusterdse/calibrate/'), 'configuration layer')
forbid([os.path.join(root, 'include/clusterdse/calibrate', h) for h in ('fit.h', 'probe_rows.h')],
       {'mpi.h'}, (), 'MPI-free calibration header')
forbid(files('src/sweep', 'include/clusterdse/sweep'), set(), ('clusterdse/calibrate/',),
       'sweep layer (reaches calibrate)')

# The model reaches nothing above it: every project header it includes, transitively, is a
# model header (quoted includes resolving next to the source are checked by their path too).
model_dirs = (os.path.join(root, 'include/clusterdse/model'), os.path.join(root, 'src/model'))
for path in files('src/model', 'include/clusterdse/model'):
    seen, todo = set(), [(path, [os.path.relpath(path, root)])]
    while todo:
        cur, chain = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        for kind, name in includes(cur):
            p = resolve(cur, kind, name)
            if p is None:
                continue  # the C library
            if not p.startswith(model_dirs):
                bad.append(f"model layer (reaches above it): {' -> '.join(chain + [name])}")
                continue
            todo.append((p, chain + [os.path.relpath(p, root)]))

# The store knows the model only through the record layout: its own includes name no
# configuration header and no model header beyond it, nothing it includes reaches a
# configuration header (transitively: the column table is sweep/columns.h, not report.h), and
# its code names no enumeration of the model (the names come from the tables it is handed) and
# reads no job (cdse_job: the sweep hands it a cdse_store_desc).
layout = {'clusterdse/model/fields.h', 'clusterdse/model/record.h', 'clusterdse/model/common.h'}
store_files = [p for p in files('src/sweep') if os.path.basename(p).startswith('store')]
store_files.append(os.path.join(root, 'include/clusterdse/sweep/store.h'))
model_names = re.compile(r'\b(cdse_status_\w+|cdse_metric_\w+|CDSE_METRIC_\w+|cdse_\w+_enum|'
                         r'cdse_job|cdse_store_mode_names|CDSE_STORE_(?:ALL|FEASIBLE|BEST|MODES))\b')
for path in store_files:
    rel = os.path.relpath(path, root)
    for name, chain in reach(path).items():
        if name.startswith('clusterdse/config/'):
            bad.append(f"store reaches a configuration header: {' -> '.join(chain)}")
    for kind, name in includes(path):
        if name.startswith('clusterdse/config/') or (name.startswith('clusterdse/model/')
                                                     and name not in layout):
            bad.append(f"store includes beyond the record layout: {rel} -> {name}")
    for no, line in enumerate(strip(open(path).read()).split('\n'), 1):
        m = model_names.search(line)
        if m:
            bad.append(f"store names a model enumeration or the job: {rel}:{no}: {m.group(0)}")

out = re.compile(r'\b(stdout|stderr)\b|(?<![\w.>])(printf|puts|putchar|perror|vprintf)\s*\(')
for path in files('src/model', 'src/config', 'src/sweep', 'src/calibrate'):
    for no, line in enumerate(strip(open(path).read()).split('\n'), 1):
        m = out.search(line)
        if m:
            bad.append(f"prints below the commands: {os.path.relpath(path, root)}:{no}: "
                       f"{line.strip()}")

for b in bad:
    print('FAIL', b)
checked = sum(1 for _ in files('src/model', 'include/clusterdse/model', 'src/config',
                               'include/clusterdse/config', 'src/sweep', 'src/calibrate'))
print(f"include_graph: {checked} files checked, {len(bad)} violation(s)")
sys.exit(1 if bad else 0)
PY
