// Stage 4's optional pack_q step for a whole model (contracts/stage04_quant.h), on the child's
// side: every Q8_0 and Q4_0 matrix a product reads, packed once before the first call when the
// stage-4 kernels define the step. weight_matmul then hands matmul_q the packed bytes with each
// slice of rows it shares out (QuantMatrix::packedFirstRow). Call once per model, before any
// product with it; the packed bytes live until the process ends, and no call allocates for them.
#pragma once

#include "model/config/model_weights.h"

void PackQuantizedWeights(const wb::model::ModelWeights& weights);
