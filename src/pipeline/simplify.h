// --simplify (ModelOpt's flag of the same name): before placement, constant subgraphs are folded
// and dead nodes removed, so Q/DQ is planned on the graph that will actually run.
//  - Folded: main-graph nodes of the default domain whose inputs are all constants (initializers
//    that are not graph inputs, Constant nodes, earlier folded results), plus Shape/Size of tensors
//    whose shape shape inference fixes. ONNX Runtime evaluates them once (ptqkit computes nothing
//    itself). Not folded: random ops, Q/DQ, nodes with subgraphs, nodes producing graph outputs,
//    and ops that expand a small constant into a large one (ConstantOfShape, Expand, Tile).
//  - Removed: nodes that no graph output depends on (outer-scope uses inside subgraphs count),
//    and initializers nothing reads.
#pragma once

#include <onnx/onnx_pb.h>

#include "runtime/session.h"

namespace ptqkit {

struct SimplifyStats {
  int folded_nodes = 0;
  int removed_nodes = 0;
  int removed_initializers = 0;
};

SimplifyStats SimplifyModel(onnx::ModelProto* model, const RuntimeOptions& runtime);

}  // namespace ptqkit
