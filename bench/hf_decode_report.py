"""The report of bench/hf_decode.py: the HBM floor, the markdown tables and the files (pure
Python: no torch). A run is one document, {"meta", "env", "shapes", "units"}: each unit (by id)
holds the unit as planned, its status (done, failed, timeout, skipped, pending) and its result.
"""
import json
import os

FLOOR_FORMULA = ("floor = (weight bytes + cache bytes per position x positions read) / HBM "
                 "bandwidth; weight bytes: every parameter once (a tied LM head once), an "
                 "embedding table only looked up (not the LM head) one row; cache bytes per "
                 "position: every layer's key and value slot in the model's dtype; positions "
                 "read: position + steps // 2 + 1, the mean filled prefix 0..pos over the "
                 "timed steps")

COLUMNS = ("eager", "compile", "inplace")
COLUMN_TITLES = {"eager": "PyTorch eager", "compile": "torch.compile (reduce-overhead)",
                 "inplace": "inplace.compile"}


def read_positions(position, steps):
    """The filled prefix a decode step reads, averaged over steps at position..position+steps-1
    (the built-in benchmark's count)."""
    return position + steps // 2 + 1


def floor_ms(weight_bytes, cache_bytes_per_position, positions, hbm_tbs):
    """Milliseconds to read the weights and `positions` cache slots once at `hbm_tbs` TB/s."""
    return (weight_bytes + cache_bytes_per_position * positions) / (hbm_tbs * 1e12) * 1e3


def decode_id(shape, s_max, model):
    return "decode/%s/%d/%s" % (shape, s_max, model)


def fmt_ms(v):
    if v is None:
        return "-"
    return ("%.2f ms" % v) if v >= 10 else ("%.3f ms" % v)


def fmt_ratio(a, b):
    return "%.2fx" % (a / b) if a is not None and b else "-"


def _entry(doc, uid):
    return (doc.get("units") or {}).get(uid)


def _value(entry, column):
    if entry is None:
        return None
    return (entry.get("result") or {}).get(column + "_ms")


def _floor(doc, entry):
    r = (entry or {}).get("result") or {}
    if r.get("weight_bytes") is None or r.get("cache_bytes_per_position") is None:
        return None
    meta = doc["meta"]
    return floor_ms(r["weight_bytes"], r["cache_bytes_per_position"],
                    read_positions(meta["position"], meta["steps"]), meta["hbm_tbs"])


def builtin_ms(doc, shape, s_max):
    """The built-in model's step at this shape and s_max (None where no size matches)."""
    if not (doc.get("shapes") or {}).get(shape, {}).get("builtin"):
        return None
    entry = _entry(doc, "builtin")
    rows = ((entry or {}).get("result") or {}).get("aliased_ms") or {}
    return rows.get(str(s_max))


class Notes:
    """Footnotes: the errors behind FAIL cells, numbered in the order they are cited."""

    def __init__(self):
        self.lines = []

    def cite(self, where, error):
        line = "%s: %s" % (where, error)
        if line not in self.lines:
            self.lines.append(line)
        return self.lines.index(line) + 1


def _cell(entry, column, notes, where):
    v = _value(entry, column)
    if v is not None:
        return fmt_ms(v)
    if entry is None or entry.get("status") in ("skipped", "pending", None):
        return "skip"
    error = ((entry.get("result") or {}).get("errors") or {}).get(column)
    if error:
        return "FAIL [%d]" % notes.cite(where + ", " + COLUMN_TITLES[column], error)
    if column not in entry["unit"].get("columns", COLUMNS):
        return "-"
    if entry.get("status") == "timeout":
        return "timeout"
    if entry.get("status") == "failed":
        error = (entry.get("result") or {}).get("error", "the worker stopped")
        return "FAIL [%d]" % notes.cite(where, error)
    return "-"


def shape_title(name, s):
    kv = "%d kv heads" % s["kv_heads"]
    return ("`%s`: d_model %d, %d layers, %d heads (%s; GPT-2: %d), MLP %d, vocab %d%s"
            % (name, s["d_model"], s["layers"], s["heads"], kv, s["heads"], s["mlp"], s["vocab"],
               ", tied embeddings" if s.get("tied") else ""))


def decode_table(doc, shape, notes):
    """The markdown table of one shape: a row per model and s_max."""
    meta = doc["meta"]
    sizes = sorted(meta["s_max"])
    lo = sizes[0]
    hi_title = "inplace %d/%d" % (sizes[-1], lo) if len(sizes) > 1 else "inplace s_max ratio"
    lines = ["| model | s_max | PyTorch eager | torch.compile | inplace.compile | built-in | "
             "HBM floor | inplace / torch.compile | inplace / built-in | %s |" % hi_title,
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for model in meta["models"]:
        base = _value(_entry(doc, decode_id(shape, lo, model)), "inplace")
        for s in sizes:
            entry = _entry(doc, decode_id(shape, s, model))
            where = "%s, s_max %d" % (model, s)
            cells = [_cell(entry, c, notes, where) for c in COLUMNS]
            ip, tc = _value(entry, "inplace"), _value(entry, "compile")
            built = builtin_ms(doc, shape, s)
            flat = fmt_ratio(ip, base) if s != lo else "-"
            lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |"
                         % (model, s, cells[0], cells[1], cells[2], fmt_ms(built),
                            fmt_ms(_floor(doc, entry)), fmt_ratio(ip, tc), fmt_ratio(ip, built),
                            flat))
    return "\n".join(lines)


def tiny_table(doc, notes):
    """The host-limited case (--tiny): each model at the tiny shape in float32, where a step is
    mostly the host's work a call."""
    lines = ["| model | s_max | PyTorch eager | torch.compile | inplace.compile | "
             "inplace host work a call | inplace / torch.compile |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for uid, entry in sorted((doc.get("units") or {}).items()):
        unit = entry.get("unit") or {}
        if unit.get("shape") != "tiny":
            continue
        where = "%s, tiny" % unit["model"]
        cells = [_cell(entry, c, notes, where) for c in COLUMNS]
        host = ((entry.get("result") or {}).get("inplace_host_us"))
        lines.append("| %s | %d | %s | %s | %s | %s | %s |"
                     % (unit["model"], unit["s_max"], cells[0], cells[1], cells[2],
                        "-" if host is None else "%.1f us" % host,
                        fmt_ratio(_value(entry, "inplace"), _value(entry, "compile"))))
    return "\n".join(lines)


def tokens_table(doc, notes):
    meta = doc["meta"]
    lines = ["| model | tokens (%d steps, float32) | logits close | caches in place | "
             "caches equal eager's | aliased outputs | program | compile |" % meta["token_steps"],
             "|---|---|---|---|---|---|---|---:|"]
    for model in meta["token_models"]:
        entry = _entry(doc, "tokens/" + model)
        r = (entry or {}).get("result") or {}
        if r.get("label") is None:
            status = (entry or {}).get("status") or "skip"
            errors = [e for _, e, _ in r.get("failures") or []] or (
                [r["error"]] if r.get("error") else [])
            if errors:
                status = "FAIL [%d]" % notes.cite(model + ", tokens", "; ".join(errors))
            elif status in ("pending", "skipped"):
                status = "skip"
            lines.append("| %s | %s | - | - | - | - | - | - |" % (model, status))
            continue
        tokens = "equal" if r["tokens_equal"] else "DIFFER"
        lines.append("| %s | %s | %s | %s (%d of %d) | %s | %d (%s) | %s | %.1f s |"
                     % (model, tokens, "yes" if r["logits_close"] else "no (%.2g)" % r["max_abs_diff"],
                        "yes" if r["caches_in_place"] else "NO", r["caches_aliased"], r["caches"],
                        "yes" if r["caches_equal_eager"] else "NO", r["aliased"],
                        ", ".join(r["aliased_kinds"]), r["label"], r["compile_s"]))
    return "\n".join(lines)


def render(doc):
    """The whole report as markdown: how it was run, a table per shape, the token check, the
    errors cited and what was left out."""
    meta, env = doc["meta"], doc.get("env") or {}
    notes = Notes()
    out = ["# Hugging Face decoders, decode step", ""]
    out.append("Command: `%s`" % meta.get("command", ""))
    if env:
        out.append("Machine: %s; torch %s, transformers %s, python %s"
                   % (env.get("device_name", "?"), env.get("torch", "?"),
                      env.get("transformers", "?"), env.get("python", "?")))
    out.append("Random weights, %s, batch 1, decode steps at positions %d..%d (token 1), mean of "
               "%d steps after %d warm-up steps timed with CUDA events, the best of %d "
               "repetitions. Built-in: `inplace bench --device cuda` at the same shape (bf16 "
               "weights, float32 activations and caches; its own floor is in its JSON)."
               % (meta["dtype"], meta["position"], meta["position"] + meta["steps"] - 1,
                  meta["steps"], meta["warmup"], meta["reps"]))
    out.append("HBM floor at %.1f TB/s: %s." % (meta["hbm_tbs"], FLOOR_FORMULA))
    for shape in [s for s in meta["shapes"] if s != "tiny"]:
        out += ["", "### " + shape_title(shape, doc["shapes"][shape]), "", decode_table(doc, shape, notes)]
    if "tiny" in meta["shapes"]:
        out += ["", "### Where the host is the limit: " + shape_title("tiny", doc["shapes"]["tiny"])
                + ", float32", "", tiny_table(doc, notes)]
    builtin = _entry(doc, "builtin")
    if builtin and (builtin.get("result") or {}).get("error"):
        notes.cite("built-in (`%s`)" % builtin["result"].get("command", "inplace bench"),
                   builtin["result"]["error"])
    if meta.get("token_models"):
        out += ["", "### Greedy tokens against eager (tiny shape, float32, on %s)" % meta["device"],
                "", tokens_table(doc, notes)]
    if notes.lines:
        out += ["", "Errors:", ""] + ["%d. %s" % (i + 1, line) for i, line in enumerate(notes.lines)]
    left = [uid for uid, e in (doc.get("units") or {}).items()
            if e.get("status") in ("pending", "skipped", "timeout")]
    if left:
        out += ["", "Not measured (out of time: --max-seconds, or --unit-seconds for one unit; "
                "rerun the command with `--resume` to continue): " + ", ".join(left)]
    return "\n".join(out) + "\n"


def _atomic_write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write(doc, out_dir):
    """hf_decode.json and hf_decode.md in out_dir (each replaced whole). Returns the markdown."""
    text = render(doc)
    _atomic_write(os.path.join(out_dir, "hf_decode.json"), json.dumps(doc, indent=1) + "\n")
    _atomic_write(os.path.join(out_dir, "hf_decode.md"), text)
    return text
