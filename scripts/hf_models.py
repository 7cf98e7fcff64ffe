"""Hugging Face decoders for the scripts that run them (scripts/test_hf.py, bench/hf_decode.py):
configs built in code for eight families at a named shape (random weights, no downloads),
transformers' exportable static-cache module, its torch.export, and inplace.compile of the
exported program (as exported, else decomposed). torch, transformers and inplace are imported
where they are used, so FAMILIES and SHAPES read without them.
"""
import os
import sys
import time
import traceback

FAMILIES = ("llama", "mistral", "qwen2", "phi3", "gemma", "gpt2", "qwen3", "gemma3")

# d_model, layers, heads, kv heads (GPT-2 has none: multi-head), MLP width, vocab; tied: the LM
# head is the embedding (None: the family's default). builtin: the `inplace bench --size` of the
# same shape (with --kv-heads), where one exists.
SHAPES = {
    "tiny": dict(d_model=64, layers=2, heads=4, kv_heads=2, mlp=128, vocab=128, tied=None,
                 builtin=None),
    # The cpu benchmark's model: `inplace bench --size small` (python/bench/hf_graphs_cpu.py).
    "small": dict(d_model=512, layers=8, heads=8, kv_heads=4, mlp=1408, vocab=8192, tied=False,
                  builtin="small"),
    # The GPU benchmark's model (issue 11): `inplace bench --size medium --kv-heads 4`.
    "medium": dict(d_model=1024, layers=12, heads=16, kv_heads=4, mlp=2816, vocab=16384, tied=True,
                   builtin="medium"),
    # Llama-3.2-1B's shape with its real vocabulary (the built-in `large` has 32768 tokens).
    "llama1b": dict(d_model=2048, layers=16, heads=32, kv_heads=8, mlp=8192, vocab=128256,
                    tied=True, builtin=None),
}

PROMPT = [3, 17, 42, 7]


def add_model_arguments(parser):
    """--model, --shape, --s-max and --position of a one-model GPU script (bench/)."""
    parser.add_argument("--model", default="llama", choices=FAMILIES)
    parser.add_argument("--shape", default="medium", choices=sorted(SHAPES))
    parser.add_argument("--s-max", type=int, default=4096)
    parser.add_argument("--position", type=int, default=200)


def config_for(family, shape, max_positions):
    """The transformers config of `family` at `shape` (a SHAPES name or dict). Mistral without
    a sliding window (as Mistral-7B-v0.2 and later); Phi-3 and Gemma with token ids inside the
    vocabulary; Gemma's head_dim set (its default is 256)."""
    import transformers as tf
    s = SHAPES[shape] if isinstance(shape, str) else shape
    tie = {} if s.get("tied") is None else {"tie_word_embeddings": s["tied"]}
    if family == "gpt2":
        return tf.GPT2Config(vocab_size=s["vocab"], n_embd=s["d_model"], n_layer=s["layers"],
                             n_head=s["heads"], n_inner=s["mlp"], n_positions=max_positions,
                             **tie)
    common = dict(vocab_size=s["vocab"], hidden_size=s["d_model"], intermediate_size=s["mlp"],
                  num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                  num_key_value_heads=s["kv_heads"], max_position_embeddings=max_positions, **tie)
    if family == "llama":
        return tf.LlamaConfig(**common)
    if family == "qwen2":
        return tf.Qwen2Config(**common)
    if family == "mistral":
        return tf.MistralConfig(pad_token_id=0, sliding_window=None, **common)
    if family == "phi3":  # fused qkv_proj and gate_up_proj
        return tf.Phi3Config(pad_token_id=0, bos_token_id=1, eos_token_id=2, **common)
    if family == "gemma":  # GeGLU, scaled embedding, (1 + w) RMSNorm
        return tf.GemmaConfig(head_dim=s["d_model"] // s["heads"], pad_token_id=0, **common)
    if family == "qwen3":  # RMSNorm of each q and k head before the rotary; head_dim set (128)
        return tf.Qwen3Config(head_dim=s["d_model"] // s["heads"], **common)
    if family == "gemma3":  # q/k norms, 4 norms a layer, sliding-window layers (5 of 6)
        hd = s["d_model"] // s["heads"]
        n = s["layers"]
        types = ["full_attention" if (i + 1) % 6 == 0 or (n < 6 and i == n - 1)
                 else "sliding_attention" for i in range(n)]
        window = int(os.environ.get("INPLACE_HF_SLIDING_WINDOW", "512"))
        return tf.Gemma3TextConfig(head_dim=hd, query_pre_attn_scalar=hd, layer_types=types,
                                   sliding_window=min(window, max_positions), pad_token_id=0,
                                   **common)
    raise ValueError("unknown family '%s' (%s)" % (family, ", ".join(FAMILIES)))


def build_model(config, dtype=None, device="cpu", seed=0):
    """AutoModelForCausalLM.from_config, random weights from `seed`, made on `device` in `dtype`
    (None: float32), in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM
    torch.manual_seed(seed)
    try:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype or torch.float32)
    except (TypeError, AttributeError):  # a release without `dtype`: made in float32, then cast
        model = AutoModelForCausalLM.from_config(config)
        if dtype is not None:
            model = model.to(dtype=dtype)
    return model.to(device).eval()


def _cache_buffers(module):
    return [(n, b) for n, b in module.named_buffers() if "key_cache" in n or "value_cache" in n]


def _on(t, device):
    import torch
    device = torch.device(device)
    return t.device.type == device.type and (device.index is None or t.device.index == device.index)


def exportable(model, max_cache, device="cpu"):
    """The transformers module that holds a StaticCache as buffers and takes
    (input_ids, cache_position): its name and constructor moved between releases. Its caches
    must have `max_cache` slots on `device` (a spelling that makes them elsewhere is passed
    over)."""
    try:
        from transformers import GenerationConfig
        model.generation_config = GenerationConfig(
            use_cache=True, cache_implementation="static", max_length=max_cache,
            cache_config={"batch_size": 1, "max_cache_len": max_cache, "device": str(device)})
    except Exception as e:  # noqa: BLE001 - newer releases take the sizes as arguments
        print("  (generation_config not set: %s: %s)" % (type(e).__name__, e), file=sys.stderr)
        gc = getattr(model, "generation_config", None)
        if gc is not None:
            gc.use_cache, gc.cache_implementation = True, "static"
    import transformers.integrations.executorch as ex
    errors = []
    candidates = []
    if hasattr(ex, "TorchExportableModuleWithStaticCache"):
        cls = ex.TorchExportableModuleWithStaticCache
        candidates += [lambda: cls(model, batch_size=1, max_cache_len=max_cache, device=device),
                       lambda: cls(model, batch_size=1, max_cache_len=max_cache),
                       lambda: cls(model), lambda: cls(model, 1, max_cache)]
    if hasattr(ex, "TorchExportableModuleForDecoderOnlyLM"):
        cls2 = ex.TorchExportableModuleForDecoderOnlyLM
        candidates += [lambda: cls2(model, batch_size=1, max_cache_len=max_cache, device=device),
                       lambda: cls2(model, max_batch_size=1, max_cache_len=max_cache),
                       lambda: cls2(model, batch_size=1, max_cache_len=max_cache), lambda: cls2(model)]
    for make in candidates:
        try:
            m = make()
            inner = getattr(m, "model", m)  # ForDecoderOnlyLM wraps the static-cache module
            if not hasattr(inner, "forward"):
                continue
            caches = _cache_buffers(m)
            wrong = [n for n, b in caches if b.shape[-2] != max_cache or not _on(b, device)]
            if wrong:
                errors.append("caches %s not [.., %d, ..] on %s" % (wrong[0], max_cache, device))
                continue
            return m
        except Exception as e:  # noqa: BLE001 - try the next spelling
            errors.append("%s: %s" % (type(e).__name__, e))
    raise RuntimeError("no exportable static-cache module: " + " | ".join(errors))


def export_target(wrapper):
    """The module torch.export exports: the static-cache module itself where the wrapper holds
    one (TorchExportableModuleForDecoderOnlyLM.model), else the wrapper."""
    inner = getattr(wrapper, "model", wrapper)
    return inner if hasattr(inner, "static_cache") or hasattr(inner, "key_cache_0") else wrapper


def cache_bytes_per_position(module):
    """Bytes of every key and value cache slot of one position ([batch, heads, slots, dim])."""
    return sum(b.numel() * b.element_size() // b.shape[-2] for _, b in _cache_buffers(module))


def call_step(m, token, pos, device="cpu"):
    import torch
    ids = torch.tensor([[token]], dtype=torch.long, device=device)
    cp = torch.tensor([pos], dtype=torch.long, device=device)
    try:
        out = m(input_ids=ids, cache_position=cp)
    except TypeError:
        out = m(ids, cp)
    return out.logits if hasattr(out, "logits") else (out[0] if isinstance(out, (tuple, list)) else out)


def decode(step_fn, steps, prompt=PROMPT):
    """Greedy decoding: the prompt one token a step, then `steps` tokens. Returns the tokens and
    the last logits."""
    logits, tokens = None, []
    pos = 0
    for t in prompt:
        logits = step_fn(t, pos)
        pos += 1
    for _ in range(steps):
        tok = int(logits[0, -1].argmax())
        tokens.append(tok)
        logits = step_fn(tok, pos)
        pos += 1
    return tokens, logits


def reset_caches(module, ep):
    import torch
    with torch.no_grad():
        for n, b in module.named_buffers():
            if "cache" in n:
                b.zero_()
        for table in (ep.state_dict, getattr(ep, "constants", {}) or {}):
            for n, t in table.items():
                if "cache" in n and isinstance(t, torch.Tensor):
                    t.zero_()


def export_static(target, device="cpu"):
    """torch.export of the static-cache module at one token (position 0). Returns the program
    and the example inputs (input_ids, cache_position)."""
    import torch
    ids = torch.tensor([[PROMPT[0]]], device=device)
    cp = torch.tensor([0], device=device)
    with torch.no_grad():
        ep = torch.export.export(target, args=(), kwargs={"input_ids": ids, "cache_position": cp})
    return ep, (ids, cp)


def exported_decoder(family, shape, s_max, dtype=None, device="cpu"):
    """A decoder of `family` at `shape` with random weights (build_model), exported as its
    static-cache module with `s_max` slots (export_static). Returns (config, program, examples)."""
    config = config_for(family, shape, s_max)
    model = build_model(config, dtype=dtype, device=device)
    ep, examples = export_static(export_target(exportable(model, s_max, device)), device)
    return config, ep, examples


def state_tensor(ep, target):
    """The tensor an exported program binds to a parameter, buffer or constant target."""
    t = ep.state_dict.get(target)
    return t if t is not None else (getattr(ep, "constants", {}) or {}).get(target)


class Compiled:
    """What compile_exported gives: `program` (an inplace CompiledProgram, None when every
    attempt failed), the ExportedProgram it was compiled from (`exported`), `label` ("as
    exported" or "decomposed"), `seconds` (inplace.compile's), `checked` (what `check`
    returned) and `failures` [(label, exception, traceback text)]."""

    def __init__(self):
        self.program = self.exported = self.label = self.seconds = self.checked = None
        self.failures = []


def compile_exported(ep, examples, target=None, check=None):
    """inplace.compile of the exported program as exported, else of ep.run_decompositions().
    `check(compiled, program)`, when given, runs on each compiled program: its failure moves on
    to the next attempt too. The caches of `target` and `ep` are zeroed before each attempt (a failed
    attempt may have written some rows)."""
    import inplace
    result = Compiled()
    for label in ("as exported", "decomposed"):
        if target is not None:
            reset_caches(target, ep)
        try:
            program = ep if label == "as exported" else ep.run_decompositions()
            t0 = time.perf_counter()
            compiled = inplace.compile(program, examples)
            seconds = time.perf_counter() - t0
            checked = check(compiled, program) if check is not None else None
            result.program, result.exported, result.label = compiled, program, label
            result.seconds, result.checked = seconds, checked
            return result
        except Exception as e:  # noqa: BLE001 - report and try the decomposed program
            result.failures.append((label, e, traceback.format_exc()))
    return result


def token_check(family, steps, device="cpu", max_cache=64, dump_dir=None, dump_only=False):
    """`family` at the tiny shape in float32 on `device`: greedy decoding for `steps` tokens by
    the exportable static-cache module in torch eager and by inplace.compile of its export
    (as exported, else decomposed). Returns a JSON-able dict: tokens_equal, logits_close
    (1e-3), max_abs_diff, want/got, the compiled program's aliased outputs, and whether every
    cache is written in place (caches_in_place: each in aliased_io, its data_ptr() unchanged
    by the calls; caches_equal_eager: its contents equal eager's after the decode). `failures`
    lists [label, error, traceback] of the attempts that failed; `label` is None when all did.
    With dump_dir, the graph JSON of the export is written there first (dump_only: only that).
    """
    import copy
    import torch
    model = build_model(config_for(family, "tiny", max_cache), device=device)
    wrapper = exportable(model, max_cache, device)
    reference = copy.deepcopy(wrapper)

    def stepper(m):
        return lambda t, p: call_step(m, t, p, device)
    with torch.no_grad():
        want, want_logits = decode(stepper(reference), steps)
    target = export_target(wrapper)
    ep, examples = export_static(target, device)
    out = {"family": family, "steps": steps, "device": str(device), "dtype": "float32",
           "want": want, "label": None, "failures": []}
    if dump_dir:  # the graph JSON inplace.compile gets, for reproducing a failure elsewhere
        import json
        from inplace.capture import capture
        path = os.path.join(dump_dir, "%s.json" % family)
        with open(path, "w") as f:
            json.dump(capture(ep, examples).doc, f)
        if dump_only:
            out["dumped"] = path
            return out
    expected = [n for n, _ in _cache_buffers(target)]

    def run(compiled, program):
        written = {t: kind for t, kind in compiled.aliased_io.values()}
        state = {t: state_tensor(program, t) for t in written}
        ptrs = {t: s.data_ptr() for t, s in state.items() if s is not None}
        with torch.no_grad():
            got, got_logits = decode(lambda t, p: compiled(
                torch.tensor([[t]], device=device), torch.tensor([p], device=device)), steps)
        caches = [n for n in expected if n in ptrs]
        ref = export_target(reference)
        return {
            "got": got, "tokens_equal": got == want,
            "logits_close": bool(torch.allclose(got_logits, want_logits, atol=1e-3, rtol=1e-3)),
            "max_abs_diff": float((got_logits - want_logits).abs().max()),
            "aliased": len(written), "aliased_kinds": sorted(set(written.values())),
            "caches": len(expected), "caches_aliased": len(caches),
            "caches_in_place": len(caches) == len(expected) and all(
                state_tensor(program, n).data_ptr() == ptrs[n] for n in caches),
            "caches_equal_eager": all(torch.allclose(
                state[n].float(), ref.get_buffer(n).float(), atol=1e-4, rtol=1e-4) for n in caches),
        }
    c = compile_exported(ep, examples, target, run)
    out["failures"] = [[label, first_line(e), tb] for label, e, tb in c.failures]
    if c.program is not None:
        out.update(c.checked)
        out["label"], out["compile_s"] = c.label, c.seconds
    return out


def first_line(e, limit=400):
    """`Type: first line of the message`, at most `limit` characters."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    line = "%s: %s" % (type(e).__name__, text)
    return line if len(line) <= limit else line[:limit - 3] + "..."


def traceback_wanted():
    return bool(os.environ.get("INPLACE_HF_TRACEBACK"))
