#include "passes/pipeline.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>

#include "passes/engine_passes.h"
#include "passes/op_info.h"

namespace inplace {

std::map<int, int> PassContext::io_map() const {
  std::map<int, int> out;
  for (const Mutation& m : mutations) out[m.output] = m.input;
  return out;
}

std::vector<std::unique_ptr<Pass>> functionalization_passes() {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_normalize_pass());
  passes.push_back(make_alias_analysis_pass());
  passes.push_back(make_inplace_to_out_of_place_pass());
  passes.push_back(make_dead_code_elimination_pass());
  return passes;
}

std::vector<std::string> functionalization_pass_names() {
  return pass_names(functionalization_passes());
}

std::vector<std::unique_ptr<Pass>> engine_passes() {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_drop_eval_dropout_pass());
  passes.push_back(make_lift_mutated_buffers_pass());
  passes.push_back(make_kv_cache_update_pass());
  passes.push_back(make_drop_identity_casts_pass());
  passes.push_back(make_recognize_attention_pass());
  passes.push_back(make_canonicalize_repeat_kv_pass());
  passes.push_back(make_attend_filled_prefix_pass());
  passes.push_back(make_fold_position_arithmetic_pass());
  passes.push_back(make_outer_product_matmul_pass());
  passes.push_back(make_fuse_rotary_table_pass());
  passes.push_back(make_prepare_in_out_weights_pass());
  passes.push_back(make_fuse_weight_casts_pass());
  passes.push_back(make_fuse_rms_norm_pass());
  passes.push_back(make_fuse_rotary_pass());
  passes.push_back(make_fuse_linear_epilogues_pass());
  passes.push_back(make_fuse_addmm_pass());
  passes.push_back(make_merge_sibling_linears_pass());
  passes.push_back(make_fuse_norm_prologues_pass());
  passes.push_back(make_fuse_head_norm_rotary_pass());
  passes.push_back(make_fuse_rotary_epilogues_pass());
  passes.push_back(make_fuse_norm_weight_offsets_pass());
  passes.push_back(make_fuse_norm_residuals_pass());
  passes.push_back(make_fuse_pointwise_pass());
  passes.push_back(make_fuse_product_epilogues_pass());
  return passes;
}

std::vector<std::unique_ptr<Pass>> compile_passes() {
  std::vector<std::unique_ptr<Pass>> passes = functionalization_passes();
  for (auto& p : engine_passes()) passes.push_back(std::move(p));
  return passes;
}

std::vector<std::string> pass_names(const std::vector<std::unique_ptr<Pass>>& passes) {
  std::vector<std::string> names;
  for (const auto& p : passes) names.push_back(p->name());
  return names;
}

namespace {
// Rewrites that only make the program faster: leaving one out keeps it correct.
const char* const kOptionalRewrites[] = {"drop_identity_casts",
                                         "recognize_attention",
                                         "canonicalize_repeat_kv",
                                         "attend_filled_prefix",
                                         "fold_position_arithmetic",
                                         "outer_product_matmul",
                                         "fuse_rotary_table",
                                         "fuse_rotary",
                                         "fuse_head_norm_rotary",
                                         "fuse_rotary_epilogues",
                                         "fuse_norm_weight_offsets",
                                         "fuse_norm_residuals",
                                         "fuse_pointwise",
                                         "fuse_linear_epilogues",
                                         "fuse_addmm",
                                         "fuse_product_epilogues",
                                         "prepare_in_out_weights"};

bool is_optional_rewrite(const std::string& name) {
  for (const char* r : kOptionalRewrites)
    if (name == r) return true;
  return false;
}

std::string optional_rewrite_names() {
  std::string out;
  for (const char* r : kOptionalRewrites) out += (out.empty() ? "" : ", ") + std::string(r);
  return out;
}

std::string join_names(const std::vector<std::unique_ptr<Pass>>& passes) {
  std::string out;
  for (const auto& p : passes) out += (out.empty() ? "" : ", ") + p->name();
  return out;
}
}  // namespace

void run_passes(const std::vector<std::unique_ptr<Pass>>& passes, Graph& graph, PassContext& ctx,
                const PipelineOptions& options) {
  for (const std::string* wanted : {&options.until, &options.print_after}) {
    if (wanted->empty()) continue;
    bool known = false;
    for (const auto& p : passes) known |= p->name() == *wanted;
    IP_CHECK(known, kInvalidArgument, "[passes] unknown pass '", *wanted,
             "'; passes are: ", join_names(passes));
  }
  for (const std::string& skip : ctx.options.skip_passes)
    IP_CHECK(is_optional_rewrite(skip), kInvalidArgument, "[passes] '", skip,
             "' cannot be skipped; the optional rewrites are: ", optional_rewrite_names());
  std::ostream& log = ctx.log ? *ctx.log : std::cerr;
  std::ostream& out = options.print_to ? *options.print_to : std::cout;
  graph.verify();
  for (const auto& pass : passes) {
    if (std::find(ctx.options.skip_passes.begin(), ctx.options.skip_passes.end(), pass->name()) !=
        ctx.options.skip_passes.end())
      continue;
    auto start = std::chrono::steady_clock::now();
    pass->run(graph, ctx);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ctx.timings_ms.emplace_back(pass->name(), ms);
    if (ctx.options.verbose)
      log << "[passes] " << std::left << std::setw(26) << pass->name() << std::right << std::fixed
          << std::setprecision(3) << ms << " ms, " << graph.size() << " nodes\n";
    try {
      graph.verify();
    } catch (const Error& e) {
      throw Error(e.code(),
                  str_cat("[passes] graph is invalid after pass '", pass->name(), "': ", e.what()));
    }
    pass->check(graph);
    if (pass->name() == options.print_after) {
      if (options.printer)
        options.printer(graph, ctx);
      else
        out << graph.to_string();
    }
    if (pass->name() == options.until) break;
  }
}

void functionalize(Graph& graph, PassContext& ctx, const PipelineOptions& options) {
  run_passes(functionalization_passes(), graph, ctx, options);
}

void verify_functional(const Graph& graph) {
  for (Node* n : graph.nodes()) {
    if (!n->is_call()) continue;
    const OpDef* op = resolve_node(*n).op;
    IP_CHECK(op->kind != OpKind::kMutating, kInternal, "[verify] node '", n->name,
             "' still mutates its arguments with '", n->target, "' after inplace_to_out_of_place");
  }
}

}  // namespace inplace
