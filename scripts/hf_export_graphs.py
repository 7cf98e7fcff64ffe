"""Writes the graph JSON (no weights) of each Hugging Face decoder family at a named shape, as
inplace.compile gets it from torch.export of transformers' exportable static-cache module: the
graphs python/bench/hf_graphs_cpu.py runs on the cpu next to the built-in model (issue 29's cpu
side: the same graphs the GPU runs). Needs torch with torch.export and transformers (the device
machine); the files are small (a few hundred KB) and kept in the repository.

  python3 scripts/hf_export_graphs.py --shape small --s-max 4096 --dtypes float32,bfloat16 \\
      --out bench/graphs/small
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import hf_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="small", choices=sorted(hf_models.SHAPES))
    ap.add_argument("--s-max", type=int, default=4096)
    ap.add_argument("--families", default=",".join(hf_models.FAMILIES))
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--device", default="cuda" if os.environ.get("CUDA_VISIBLE_DEVICES") != ""
                    else "cpu")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import torch
    from inplace.capture import capture
    device = args.device if torch.cuda.is_available() else "cpu"
    os.makedirs(args.out, exist_ok=True)
    for family in args.families.split(","):
        for dtype_name in args.dtypes.split(","):
            t0 = time.perf_counter()
            dtype = getattr(torch, dtype_name)
            model = hf_models.build_model(hf_models.config_for(family, args.shape, args.s_max),
                                          dtype=dtype, device=device)
            wrapper = hf_models.exportable(model, args.s_max, device)
            target = hf_models.export_target(wrapper)
            ep, examples = hf_models.export_static(target, device)
            doc = capture(ep, examples).doc
            name = "%s%s.json" % (family, "" if dtype == torch.float32 else
                                  "_" + {"bfloat16": "bf16", "float16": "fp16"}[dtype_name])
            with open(os.path.join(args.out, name), "w") as f:
                json.dump(doc, f, separators=(",", ":"))
            print("%s: %d nodes, %.1f s" % (name, len(doc["nodes"]), time.perf_counter() - t0),
                  flush=True)
            del model, wrapper, target, ep
            if device != "cpu":
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
