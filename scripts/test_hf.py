"""Hugging Face decoders with a static cache, exported by torch.export and compiled by inplace,
decoded for 16 steps: the tokens must equal the model's own (the same exportable module run
by torch eager), and the caches must be written in place.

Run by scripts/test-hf.sh (torch >= 2.5 with transformers). INPLACE_HF_DUMP=DIR writes the
graph JSON of each model (as exported) there; with INPLACE_HF_DUMP_ONLY=1 nothing
is compiled. Prints one line per model and a
summary; exits non-zero when any model fails or is skipped without INPLACE_HF_ALLOW_SKIP=1.
"""
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402

import hf_models  # noqa: E402 - beside this script: configs, export, compile, the token check

STEPS = 16
MAX_CACHE = 64


def check(name):
    r = hf_models.token_check(name, STEPS, max_cache=MAX_CACHE,
                              dump_dir=os.environ.get("INPLACE_HF_DUMP"),
                              dump_only=bool(os.environ.get("INPLACE_HF_DUMP_ONLY")))
    if r.get("dumped"):
        return True, ["%-6s graph written to %s" % (name, r["dumped"])]
    lines = []
    for label, error, tb in r["failures"]:
        lines.append("%-6s %-11s FAILED: %s" % (name, label, error))
        if hf_models.traceback_wanted():
            lines.append(tb)
    if r["label"] is None:
        return False, lines
    lines.append("%-6s %-11s tokens %s, logits close %s, compile %.2f s, %d aliased outputs (%s), "
                 "caches in place %s (%d of %d aliased), equal to eager's %s"
                 % (name, r["label"], "EQUAL" if r["tokens_equal"] else "DIFFER", r["logits_close"],
                    r["compile_s"], r["aliased"], ",".join(r["aliased_kinds"]),
                    r["caches_in_place"], r["caches_aliased"], r["caches"], r["caches_equal_eager"]))
    if not r["tokens_equal"]:
        lines.append("       want %s\n       got  %s" % (r["want"], r["got"]))
    return r["tokens_equal"] and r["logits_close"], lines


def main():
    import transformers
    print("torch %s, transformers %s, python %s" % (torch.__version__, transformers.__version__,
                                                  sys.version.split()[0]))
    results = {}
    for name in hf_models.FAMILIES:
        try:
            ok, lines = check(name)
        except Exception as e:  # noqa: BLE001 - a model that cannot even be exported
            ok, lines = False, ["%-6s FAILED before compiling: %s: %s" % (name, type(e).__name__, e)]
            if hf_models.traceback_wanted():
                lines.append(traceback.format_exc())
        results[name] = ok
        print("\n".join(lines), flush=True)
    print("summary: " + ", ".join("%s %s" % (n, "PASS" if ok else "FAIL") for n, ok in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
