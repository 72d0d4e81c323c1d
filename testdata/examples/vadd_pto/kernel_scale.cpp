/* kernel_scale.cpp: func_id 1, z *= s, on PTO-ISA tiles.
 * tensors[0] = z (INOUT, float32), scalars[0] = the float32 bits of s in
 * its low 32 bits. Each row of at most kTileCols elements goes through
 * TLOAD, TMULS and TSTORE. */
#include "vadd_pto.h"

using namespace pto;

namespace {

using Row = Tile<TileType::Vec, float, 1, kTileCols, BLayout::RowMajor, -1, -1>;
using RowShape = Shape<1, 1, 1, 1, -1>;
using RowStride = Stride<1, 1, 1, -1, 1>;
using RowGlobal = GlobalTensor<float, RowShape, RowStride>;

void scale_row(float *z, float s, int cols)
{
    Row src(1, cols);
    Row dst(1, cols);
    TASSIGN(src, 0x0);
    TASSIGN(dst, 0x1000);
    RowGlobal zg(z, RowShape(cols), RowStride(cols));
    TLOAD(src, zg);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TMULS(dst, src, s);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(zg, dst);
}

} // namespace

extern "C" int32_t ptojit_kernel(const ptojit_args *args)
{
    if (args->abi_version != PTOJIT_SIM_ABI_VERSION || args->tensor_count != 1 || args->scalar_count != 1) {
        return 1;
    }
    const ptojit_tensor *z = &args->tensors[0];
    float s = vadd_scalar_f32(args->scalars[0]);
    float *zs = static_cast<float *>(z->data);
    uint64_t n = vadd_elems(z);
    for (uint64_t i = 0; i < n; i += kTileCols) {
        int cols = static_cast<int>(n - i < kTileCols ? n - i : kTileCols);
        scale_row(zs + i, s, cols);
    }
    return 0;
}
