// PartitionForCodegen: the preparing passes, then the four partitioning passes.
#include "backend/partition.h"

#include "backend/build.h"
#include "transform/annotate_target.h"
#include "transform/combine_layer_norm.h"
#include "transform/fold_constant.h"
#include "transform/merge_compiler_regions.h"
#include "transform/simplify_inference.h"

namespace kiln::backend {

ir::Expr PartitionForCodegen(const ir::Expr& main, const std::string& codegen, const runtime::NamedArrays& params,
                             const transform::PartitionOptions& options, const std::vector<ExternalCodegen>& table) {
  const ExternalCodegen& c = FindExternalCodegen(codegen, table);
  transform::PassContext context;
  transform::PassEnvironment environment{context};
  ir::Expr f = BindParams(main, params);
  f = transform::SimplifyInference(f, environment);
  f = transform::CombineLayerNorm(f, environment);
  f = transform::FoldConstant(f, environment);
  if (c.prepare != nullptr) f = c.prepare(f);
  if (c.patterns != nullptr) f = transform::MergeComposite(f, c.patterns());
  f = transform::AnnotateTarget(f, {{c.name, c.supports}});
  return transform::PartitionGraph(transform::MergeCompilerRegions(f), options);
}

}  // namespace kiln::backend
