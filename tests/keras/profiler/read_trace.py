#!/usr/bin/env python3
"""Reads a profiler trace as its viewers and TensorBoard's profile plugin would, and checks it.

    read_trace.py check TRACE.json.gz LAYER_PATH...   ->  JSON report on stdout
    read_trace.py plugin LOGDIR [LAYER_PATH...]       ->  {"runs": {RUN: {...}}} on stdout

check: gunzips and parses the file with the standard gzip and json modules, then checks the
Chrome trace event format (the JSON Object Format: traceEvents, displayTimeUnit; complete events
with ph/ts/dur/pid/tid/name/cat/args, counters, thread-name metadata) and that, for every LAYER_PATH,
forward ops ran under it (args.layer) and each of its ops lies inside a step event of the same
thread. Any violation exits 1 with the reason on stderr. The report counts what it found.

plugin: lists the profile runs of LOGDIR with the real profile plugin's own discovery
(xprof / tensorboard-plugin-profile: ProfilePlugin.generate_runs and _run_dir), the files of
each run directory and the tools the plugin offers for it (generate_tools_of_run, which reads the
.xplane.pb); with LAYER_PATHs it also converts each run's .xplane.pb to the trace viewer's events
with the plugin's own converter (raw_to_tool_data.xspace_to_tool_data) and applies the checks of
`check` to them (report under "trace_viewer"). Exits 77 when the plugin cannot be imported, so a
caller can skip.
"""
import gzip
import json
import os
import sys


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def check(path, layer_paths):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return check_doc(path, doc, layer_paths, chrome=True)


def check_doc(path, doc, layer_paths, chrome):
    """chrome: our own file (categories in cat, memory counters); else the plugin's conversion
    of the .xplane.pb (categories in args.category, no counters)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail(f"{path}: expected an object with a traceEvents list, got {type(doc).__name__}")
    if doc.get("displayTimeUnit") not in ("ms", "ns"):
        fail(f"{path}: expected displayTimeUnit ms or ns, got {doc.get('displayTimeUnit')!r}")
    events = doc["traceEvents"]
    complete, counters, thread_names = [], [], {}
    for e in events:
        if not chrome and e == {}:
            continue  # the converter closes its list with an empty object
        ph = e.get("ph")
        if ph == "X":
            if not chrome:
                e["cat"] = e.setdefault("args", {}).get("category", "")
            for key, kind in (("ts", (int, float)), ("dur", (int, float)), ("pid", int), ("tid", int),
                              ("name", str), ("cat", str), ("args", dict)):
                if not isinstance(e.get(key), kind):
                    fail(f"complete event {e}: expected {key} of type {kind}")
            if e["dur"] < 0:
                fail(f"complete event {e}: negative duration")
            complete.append(e)
        elif ph == "C":
            if not isinstance(e.get("args"), dict) or not all(isinstance(v, (int, float)) for v in e["args"].values()):
                fail(f"counter event {e}: expected numeric args")
            counters.append(e)
        elif ph == "M":
            if e.get("name") == "thread_name":
                thread_names[e["tid"]] = e["args"]["name"]
        else:
            fail(f"event {e}: unexpected phase {ph!r}")
    for tid in {e["tid"] for e in complete}:
        if tid not in thread_names:
            fail(f"thread {tid} has events but no thread_name metadata")
    steps = [e for e in complete if e["cat"] == "step"]
    if not steps:
        fail("no step events")
    eps = 1e-6  # microseconds; ts and dur are exact to the nanosecond in the file

    def enclosing_step(e):
        for s in steps:
            if s["tid"] == e["tid"] and s["ts"] - eps <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + eps:
                return s
        return None

    ops = [e for e in complete if e["cat"].startswith("op")]
    per_layer = {}
    for path in layer_paths:
        mine = [e for e in ops if e["args"].get("layer") == path]
        forward = [e for e in mine if e["args"].get("phase") == "forward"]
        gradient = [e for e in mine if e["args"].get("phase") == "gradient"]
        if not forward:
            fail(f"layer {path}: no forward op events")
        for e in mine:
            if enclosing_step(e) is None:
                fail(f"layer {path}: op {e['name']} at {e['ts']} us (tid {e['tid']}) is inside no step event")
            for key in ("input_shapes", "bytes_allocated"):
                if key not in e["args"]:
                    fail(f"op event {e}: expected args.{key}")
        layer_events = [e for e in complete if e["cat"] == "layer" and e["args"].get("path") == path]
        for e in layer_events:
            if enclosing_step(e) is None:
                fail(f"layer event {path} at {e['ts']} us is inside no step event")
        per_layer[path] = {"forward": len(forward), "gradient": len(gradient), "layer_events": len(layer_events),
                           "op_names": sorted({e["name"] for e in mine}),
                           "flops": sum(e["args"].get("flops", 0) for e in mine)}
    memory = [e for e in counters if e["name"].startswith("memory ")]
    if chrome and not memory:
        fail("no memory counter events")
    return {
        "steps": sorted([[s["args"]["mode"], s["args"]["step"]] for s in steps]),
        "ops": len(ops),
        "ops_in_steps": sum(1 for e in ops if enclosing_step(e) is not None),
        "layers": per_layer,
        "categories": sorted({e["cat"] for e in complete}),
        "memory_counters": len(memory),
        "memory_keys": sorted(memory[0]["args"].keys()) if memory else [],
        "threads": len(thread_names),
    }


def plugin(logdir, layer_paths):
    try:
        import types
        from xprof import profile_plugin
        from xprof.convert import raw_to_tool_data
    except Exception as exc:  # ImportError, or a broken install
        print(f"the profile plugin (xprof / tensorboard-plugin-profile) is not importable: {exc!r}", file=sys.stderr)
        sys.exit(77)
    context = types.SimpleNamespace(logdir=logdir, data_provider=None,
                                    flags=types.SimpleNamespace(master_tpu_unsecure_channel=""))
    p = profile_plugin.ProfilePlugin(context)
    runs = {}
    for run in p.generate_runs():
        run_dir = p._run_dir(run)
        files = sorted(os.listdir(run_dir))  # before the plugin caches its tool list there
        entry = {"dir": str(run_dir), "files": files, "tools": sorted(p.generate_tools_of_run(run, run_dir))}
        xplanes = [os.path.join(run_dir, f) for f in files if f.endswith(".xplane.pb")]
        if layer_paths and xplanes:
            data, _ = raw_to_tool_data.xspace_to_tool_data(xplanes, "trace_viewer", {})
            if not data:
                fail(f"{run}: the plugin converted {xplanes} to no trace viewer data")
            text = data.decode() if isinstance(data, bytes) else data
            entry["trace_viewer"] = check_doc(xplanes[0], json.loads(text), layer_paths, chrome=False)
        runs[run] = entry
    return {"runs": runs}


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "check":
        print(json.dumps(check(sys.argv[2], sys.argv[3:])))
    elif len(sys.argv) >= 3 and sys.argv[1] == "plugin":
        print(json.dumps(plugin(sys.argv[2], sys.argv[3:])))
    else:
        fail(__doc__)
